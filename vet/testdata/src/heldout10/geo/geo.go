// Package geo stores courier positions from SQS for the live map.
package geo

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
)

// Config wires the service.
type Config struct {
	SQS     string
	Pool    *pgxpool.Pool
	Observe func(consumer string, d time.Duration, err error)
}

// Run consumes positions until ctx ends.
func Run(ctx context.Context, cfg Config) error {
	timed := func(name string) consumer.Middleware {
		return func(next consumer.Handler) consumer.Handler {
			return consumer.HandlerFunc(func(ctx context.Context, msg *consumer.Message) error {
				start := time.Now()
				err := next.Handle(ctx, msg)
				if cfg.Observe != nil {
					cfg.Observe(name, time.Since(start), err)
				}
				return err
			})
		}
	}

	b, err := adapters.Open(ctx, cfg.SQS)
	if err != nil {
		return err
	}
	src, err := b.Source(ctx, "courier-positions", "geo")
	if err != nil {
		return err
	}

	h := consumer.HandlerFunc(func(ctx context.Context, msg *consumer.Message) error {
		var p struct {
			Courier string    `json:"courier"`
			Lat     float64   `json:"lat"`
			Lng     float64   `json:"lng"`
			At      time.Time `json:"at"`
		}
		if err := json.Unmarshal(msg.Body, &p); err != nil {
			return consumer.Permanent(err)
		}
		_, err := cfg.Pool.Exec(ctx, `INSERT INTO courier_trail (courier_id, lat, lng, at) VALUES ($1, $2, $3, $4)`, p.Courier, p.Lat, p.Lng, p.At)
		return err
	})

	c, err := consumer.New(src, h, consumer.Config{Name: "geo", Concurrency: 32}, timed("geo")) // want "."
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
