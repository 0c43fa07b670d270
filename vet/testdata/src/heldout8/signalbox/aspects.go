// Package signalbox follows the aspects of the line's railway signals: it
// keeps the interlocking's log, and a Redis copy of every signal's current
// aspect for the dispatchers' board.
package signalbox

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/redis/go-redis/v9"
)

type aspectChanged struct {
	Signal string    `json:"signal"`
	Aspect string    `json:"aspect"` // red | yellow | double-yellow | green
	At     time.Time `json:"at"`
}

func decodeAspect(msg *consumer.Message) (aspectChanged, error) {
	var a aspectChanged
	if err := json.Unmarshal(msg.Body, &a); err != nil {
		return a, consumer.Permanent(err)
	}
	return a, nil
}

// logAspect appends the change to the interlocking log, in the claim's
// transaction.
func logAspect(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	a, err := decodeAspect(msg)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `INSERT INTO aspect_log (signal, aspect, at, message_id) VALUES ($1, $2, $3, $4)`,
		a.Signal, a.Aspect, a.At, msg.ID)
	return err
}

// board mirrors the current aspect of each signal in Redis. A repeated
// message sets the same value again; an older one never overwrites a newer
// one, because the timestamp travels in the value and the board ignores
// stale ones when it reads.
type board struct {
	rdb *redis.Client
}

func (b board) Handle(ctx context.Context, msg *consumer.Message) error {
	a, err := decodeAspect(msg)
	if err != nil {
		return err
	}
	v, err := json.Marshal(a)
	if err != nil {
		return err
	}
	return b.rdb.Set(ctx, "aspect:"+a.Signal, v, 0).Err()
}
