package courier

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"heldout3/courier/eta"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/outbox"
)

type dispatcher struct {
	eta *eta.Client
	now func() time.Time
}

// assign picks the nearest free courier while the routing service computes
// the trip's ETA, then records both and offers the job to the courier app.
func (d *dispatcher) assign(ctx context.Context, tx pgx.Tx, j jobEvent) error {
	var trip time.Duration
	var tripErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		trip, tripErr = d.eta.Estimate(ctx, j.Pickup, j.Dropoff)
	}()

	var courierID string
	err := tx.QueryRow(ctx, `SELECT id FROM couriers WHERE state = 'free' ORDER BY last_ping_at DESC LIMIT 1 FOR UPDATE SKIP LOCKED`).Scan(&courierID)
	<-done
	if err != nil {
		return fmt.Errorf("courier: no free courier for %s: %w", j.JobID, err)
	}
	if tripErr != nil {
		return tripErr
	}
	eta := d.now().Add(trip)
	if _, err := tx.Exec(ctx, `UPDATE couriers SET state = 'offered' WHERE id = $1`, courierID); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO jobs (id, courier_id, pickup, dropoff, eta) VALUES ($1, $2, $3, $4, $5)`,
		j.JobID, courierID, j.Pickup, j.Dropoff, eta); err != nil {
		return fmt.Errorf("courier: job %s: %w", j.JobID, err)
	}
	body, err := json.Marshal(map[string]any{"job_id": j.JobID, "courier_id": courierID, "eta": eta})
	if err != nil {
		return err
	}
	return outbox.Send(ctx, tx, "courier-app.offers", &consumer.Message{Key: courierID, Body: body})
}

func (d *dispatcher) pickedUp(ctx context.Context, tx pgx.Tx, j jobEvent) error {
	_, err := tx.Exec(ctx, `UPDATE jobs SET picked_up_at = $2 WHERE id = $1`, j.JobID, d.now())
	return err
}

func (d *dispatcher) delivered(ctx context.Context, tx pgx.Tx, j jobEvent) error {
	if _, err := tx.Exec(ctx, `UPDATE jobs SET delivered_at = $2 WHERE id = $1`, j.JobID, d.now()); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `UPDATE couriers SET state = 'free' WHERE id = $1`, j.CourierID)
	return err
}
