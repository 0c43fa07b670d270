package dispatchroutes

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/outbox"
)

type pickup struct {
	ID        string `json:"id"`
	Depot     string `json:"depot"`
	CourierID string `json:"courier_id"`
	Window    string `json:"window"`
}

func decode(msg *consumer.Message) (pickup, error) {
	var p pickup
	if err := json.Unmarshal(msg.Body, &p); err != nil {
		return p, consumer.Permanent(fmt.Errorf("decode pickup: %w", err))
	}
	return p, nil
}

func (b *Board) onCreated(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	p, err := decode(msg)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `INSERT INTO board (pickup_id, depot, time_window, state) VALUES ($1, $2, $3, 'unassigned')`, p.ID, p.Depot, p.Window)
	return err
}

func (b *Board) onAssigned(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	p, err := decode(msg)
	if err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `UPDATE board SET courier_id = $2, state = 'assigned' WHERE pickup_id = $1`, p.ID, p.CourierID); err != nil {
		return err
	}
	return outbox.Send(ctx, tx, "courier.job-offered", &consumer.Message{ID: msg.ID + ":offer", Key: p.CourierID, Body: msg.Body})
}

func (b *Board) onCompleted(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	p, err := decode(msg)
	if err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `DELETE FROM board WHERE pickup_id = $1`, p.ID); err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `UPDATE couriers SET completed_today = completed_today + 1 WHERE id = $1`, p.CourierID)
	return err
}
