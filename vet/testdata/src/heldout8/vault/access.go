// Package vault records every opening of a safe deposit box as an event and
// projects the boxes' last access.
package vault

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
)

type boxOpened struct {
	BoxID    string    `json:"box_id"`
	Holder   string    `json:"holder"`
	Branch   string    `json:"branch"`
	OpenedAt time.Time `json:"opened_at"`
}

// AccessLog is the handler of box events.
type AccessLog struct {
	proj *projector
}

func (a *AccessLog) append(ctx context.Context, tx pgx.Tx, e boxOpened, msgID string) error {
	data, err := json.Marshal(e)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `INSERT INTO box_events (box_id, type, data, message_id) VALUES ($1, 'BoxOpened', $2, $3)`,
		e.BoxID, data, msgID)
	return err
}

func (a *AccessLog) project(ctx context.Context, tx pgx.Tx, e boxOpened) error {
	_, err := tx.Exec(ctx, `UPDATE boxes SET last_opened_at = $2, last_holder = $3 WHERE id = $1`, e.BoxID, e.OpenedAt, e.Holder)
	return err
}

// Record appends the event and schedules its projection.
func (a *AccessLog) Record(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var e boxOpened
	if err := json.Unmarshal(msg.Body, &e); err != nil {
		return consumer.Permanent(err)
	}
	if err := a.append(ctx, tx, e, msg.ID); err != nil {
		return err
	}
	a.proj.Enqueue(func(ctx context.Context) error { return a.project(ctx, tx, e) }) // want "the transaction queued for the projector's goroutine"
	return nil
}
