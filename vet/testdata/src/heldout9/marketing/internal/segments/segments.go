// Package segments maintains audience segments.
package segments

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
)

// Joined adds a user to a segment.
func Joined(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var ev struct {
		User    string `json:"user"`
		Segment string `json:"segment"`
	}
	if err := json.Unmarshal(msg.Body, &ev); err != nil {
		return consumer.Permanent(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO segment_members (segment, user_id) VALUES ($1, $2) ON CONFLICT DO NOTHING`, ev.Segment, ev.User); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `UPDATE segments SET size = size + 1 WHERE id = $1`, ev.Segment)
	return err
}

// Left removes a user from a segment.
func Left(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	_, err := tx.Exec(ctx, `DELETE FROM segment_members WHERE user_id = $1`, msg.Key)
	return err
}
