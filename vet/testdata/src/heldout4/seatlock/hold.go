// Package seatlock turns seat holds into tickets once the order is paid. The
// box office and the resale market both sell the same seats, so a seat is
// locked in Redis across both systems while it is being issued.
package seatlock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
	"github.com/redis/go-redis/v9"
)

var errSeatBusy = errors.New("seatlock: seat is being issued by another system")

type orderPaid struct {
	OrderID string   `json:"order_id"`
	EventID string   `json:"event_id"`
	Seats   []string `json:"seats"`
}

// Issuer issues tickets.
type Issuer struct {
	locks *redis.Client
	ttl   time.Duration
}

// Handle issues the tickets of one paid order.
func (i *Issuer) Handle(ctx context.Context, msg *consumer.Message) error {
	var o orderPaid
	if err := json.Unmarshal(msg.Body, &o); err != nil {
		return consumer.Permanent(fmt.Errorf("decode order: %w", err))
	}
	tx, ok := postgres.Tx(ctx)
	if !ok {
		return fmt.Errorf("seatlock: no claim transaction")
	}
	for _, seat := range o.Seats {
		key := "seat:" + o.EventID + ":" + seat
		got, err := i.locks.SetNX(ctx, key, o.OrderID, i.ttl).Result()
		if err != nil {
			return fmt.Errorf("lock %s: %w", key, err)
		}
		if !got {
			return errSeatBusy
		}
		defer i.locks.Del(ctx, key)
		if _, err := tx.Exec(ctx,
			`INSERT INTO tickets (event_id, seat, order_id) VALUES ($1, $2, $3)`, o.EventID, seat, o.OrderID); err != nil {
			return fmt.Errorf("issue %s: %w", seat, err)
		}
	}
	_, err := tx.Exec(ctx, `UPDATE orders SET state = 'ticketed' WHERE id = $1`, o.OrderID)
	return err
}
