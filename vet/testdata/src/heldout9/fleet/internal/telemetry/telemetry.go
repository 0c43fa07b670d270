// Package telemetry records vehicle positions and faults.
package telemetry

import (
	"context"
	"database/sql"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"

	"heldout9/fleet/internal/cache"
)

// Recorder records telemetry.
type Recorder struct {
	status *cache.Status
}

type fault struct {
	Vehicle string    `json:"vehicle"`
	Code    string    `json:"code"`
	At      time.Time `json:"at"`
}

func (r *Recorder) fault(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var f fault
	if err := json.Unmarshal(msg.Body, &f); err != nil {
		return consumer.Permanent(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO faults (vehicle, code, at) VALUES ($1, $2, $3)`, f.Vehicle, f.Code, f.At); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `UPDATE vehicles SET status = 'fault' WHERE id = $1`, f.Vehicle); err != nil {
		return err
	}
	return r.status.Invalidate(ctx, f.Vehicle) // want "."
}

func (r *Recorder) position(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var p struct {
		Vehicle string  `json:"vehicle"`
		Lat     float64 `json:"lat"`
		Lon     float64 `json:"lon"`
	}
	if err := json.Unmarshal(msg.Body, &p); err != nil {
		return consumer.Permanent(err)
	}
	_, err := tx.Exec(ctx, `UPDATE vehicles SET lat = $2, lon = $3 WHERE id = $1`, p.Vehicle, p.Lat, p.Lon)
	return err
}

// Start wires the telemetry consumers; db is the same database through
// database/sql, the handle the dispatch UI's cache code was written for.
func Start(ctx context.Context, pool *pgxpool.Pool, db *sql.DB, broker adapters.Broker) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	r := &Recorder{status: &cache.Status{DB: db}}
	for topic, fn := range map[string]func(context.Context, pgx.Tx, *consumer.Message) error{
		"fleet.faults":    r.fault,
		"fleet.positions": r.position,
	} {
		src, err := broker.Source(ctx, topic, "fleet")
		if err != nil {
			return err
		}
		c, err := consumer.New(src, postgres.HandlerFunc(fn), consumer.Config{Name: "fleet-" + topic}, middleware.Idempotency(st))
		if err != nil {
			return err
		}
		go c.Run(ctx)
	}
	return nil
}
