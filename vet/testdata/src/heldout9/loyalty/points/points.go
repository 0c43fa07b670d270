// Package points awards loyalty points for purchases.
package points

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"

	"heldout9/loyalty/db"
)

// Awarder awards points.
type Awarder struct {
	*db.Base
	rate int64 // points per currency unit
}

// NewAwarder returns an awarder over pool.
func NewAwarder(pool *pgxpool.Pool, rate int64) *Awarder {
	return &Awarder{Base: db.NewBase(pool), rate: rate}
}

type purchase struct {
	Member string `json:"member"`
	Amount int64  `json:"amount"`
}

func (a *Awarder) award(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var p purchase
	if err := json.Unmarshal(msg.Body, &p); err != nil {
		return consumer.Permanent(err)
	}
	pts := p.Amount * a.rate
	if _, err := tx.Exec(ctx, `INSERT INTO point_events (id, member, points) VALUES ($1, $2, $3)`, msg.ID, p.Member, pts); err != nil {
		return err
	}
	return a.Exec(ctx, "bump balance", `UPDATE members SET points = points + $2 WHERE id = $1`, p.Member, pts) // want "."
}

func (a *Awarder) expire(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	_, err := tx.Exec(ctx, `UPDATE members SET points = 0 WHERE id = $1`, msg.Key)
	return err
}

// Consumers wires the award and expiry consumers.
func Consumers(ctx context.Context, pool *pgxpool.Pool, src func(topic string) (consumer.Source, error)) ([]*consumer.Consumer, error) {
	st, err := postgres.New(pool)
	if err != nil {
		return nil, err
	}
	a := NewAwarder(pool, 10)
	handlers := map[string]func(context.Context, pgx.Tx, *consumer.Message) error{
		"purchases.completed": a.award,
		"members.expired":     a.expire,
	}
	var out []*consumer.Consumer
	for topic, fn := range handlers {
		s, err := src(topic)
		if err != nil {
			return nil, err
		}
		c, err := consumer.New(s, postgres.HandlerFunc(fn), consumer.Config{Name: "loyalty-" + topic}, middleware.Idempotency(st))
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}
