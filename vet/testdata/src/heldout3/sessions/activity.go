package sessions

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
)

type activity struct {
	SessionID string    `json:"session_id"`
	UserID    string    `json:"user_id"`
	Kind      string    `json:"kind"`
	At        time.Time `json:"at"`
}

type tracker struct {
	lastSeen *coalescer
}

func (t *tracker) onActivity(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var a activity
	if err := json.Unmarshal(msg.Body, &a); err != nil {
		return consumer.Permanent(err)
	}
	if a.Kind == "logout" {
		if _, err := tx.Exec(ctx, `UPDATE sessions SET ended_at = $2 WHERE id = $1`, a.SessionID, a.At); err != nil {
			return fmt.Errorf("sessions: end %s: %w", a.SessionID, err)
		}
		return nil
	}
	t.lastSeen.Add(func(ctx context.Context) error { // want "closure using the claim's transaction queued in the coalescer, run after the handler returned"
		_, err := tx.Exec(ctx, `UPDATE sessions SET last_seen_at = greatest(last_seen_at, $2) WHERE id = $1`, a.SessionID, a.At)
		return err
	})
	return nil
}
