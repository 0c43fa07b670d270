// Package parking closes parking sessions and frees bays.
package parking

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/redis/go-redis/v9"
)

type sessionEnded struct {
	SessionID string `json:"session_id"`
	Garage    string `json:"garage"`
	Bay       string `json:"bay"`
	FeeCts    int64  `json:"fee_cents"`
}

// Signage pushes free-bay counts to the garage entrance displays.
type Signage struct {
	rdb *redis.Client
}

func (s *Signage) bayFreed(ctx context.Context, garage, bay string) error {
	return s.rdb.Publish(ctx, "signage:"+garage, bay).Err() // want "Redis publish inside transactional handler"
}

type closer struct {
	signs *Signage
}

func (c closer) close(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var ev sessionEnded
	if err := json.Unmarshal(msg.Body, &ev); err != nil {
		return consumer.Permanent(err)
	}
	if _, err := tx.Exec(ctx, `UPDATE sessions SET ended_at = now(), fee_cents = $2 WHERE id = $1`, ev.SessionID, ev.FeeCts); err != nil {
		return err
	}
	return c.signs.bayFreed(ctx, ev.Garage, ev.Bay)
}
