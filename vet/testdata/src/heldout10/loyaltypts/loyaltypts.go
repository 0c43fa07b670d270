// Package loyaltypts credits loyalty points for purchases read from a Redis
// stream.
package loyaltypts

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

// Config wires the service.
type Config struct {
	RedisURL string // redis://cache-1:6379/2
	DB       *pgxpool.Pool
	// PointsPerEuro is the earn rate; 0 means 1.
	PointsPerEuro int
}

// Run consumes purchases until ctx ends.
func Run(ctx context.Context, cfg Config) error {
	rate := cfg.PointsPerEuro
	if rate == 0 {
		rate = 1
	}

	// exec is swapped for a recorder in the unit tests.
	var exec func(ctx context.Context, sql string, args ...any) (pgx.CommandTag, error) = cfg.DB.Exec

	st, err := postgres.New(cfg.DB)
	if err != nil {
		return err
	}
	b, err := adapters.Open(ctx, cfg.RedisURL)
	if err != nil {
		return err
	}
	src, err := b.Source(ctx, "purchases", "loyalty")
	if err != nil {
		return err
	}

	credit := postgres.HandlerFunc(func(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
		var p struct {
			Member string `json:"member"`
			Cents  int64  `json:"cents"`
		}
		if err := json.Unmarshal(msg.Body, &p); err != nil {
			return consumer.Permanent(err)
		}
		points := p.Cents / 100 * int64(rate)
		if points == 0 {
			return nil
		}
		if _, err := tx.Exec(ctx, `INSERT INTO point_entries (member_id, points, message_id) VALUES ($1, $2, $3)`, p.Member, points, msg.ID); err != nil {
			return err
		}
		_, err := exec(ctx, `UPDATE members SET balance = balance + $2, tier_points = tier_points + $2 WHERE id = $1`, p.Member, points) // want "."
		return err
	})

	c, err := consumer.New(src, credit, consumer.Config{Name: "loyalty", Concurrency: 4}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
