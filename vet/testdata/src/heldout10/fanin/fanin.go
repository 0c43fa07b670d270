// Package fanin ingests bulk product feeds from SQS: each message carries a
// few hundred rows, validated in parallel, then written in one statement.
package fanin

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
	"golang.org/x/sync/errgroup"
)

// Config wires the service.
type Config struct {
	SQS  string
	Pool *pgxpool.Pool
}

type row struct {
	SKU   string `json:"sku"`
	Title string `json:"title"`
	Cents int64  `json:"cents"`
}

// Run consumes feeds until ctx ends.
func Run(ctx context.Context, cfg Config) error {
	validate := func(r row) error {
		if r.SKU == "" || len(r.SKU) > 64 {
			return fmt.Errorf("bad sku %q", r.SKU)
		}
		if r.Cents < 0 {
			return fmt.Errorf("negative price for %s", r.SKU)
		}
		return nil
	}

	st, err := postgres.New(cfg.Pool)
	if err != nil {
		return err
	}
	b, err := adapters.Open(ctx, cfg.SQS)
	if err != nil {
		return err
	}
	src, err := b.Source(ctx, "product-feeds", "feed-ingest")
	if err != nil {
		return err
	}

	h := postgres.HandlerFunc(func(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
		var rows []row
		if err := json.Unmarshal(msg.Body, &rows); err != nil {
			return consumer.Permanent(err)
		}
		g, gctx := errgroup.WithContext(ctx)
		chunk := (len(rows) + runtime.NumCPU() - 1) / runtime.NumCPU()
		for start := 0; start < len(rows); start += chunk {
			part := rows[start:min(start+chunk, len(rows))]
			g.Go(func() error {
				for _, r := range part {
					if gctx.Err() != nil {
						return gctx.Err()
					}
					if err := validate(r); err != nil {
						return err
					}
				}
				return nil
			})
		}
		if err := g.Wait(); err != nil {
			return consumer.Permanent(err)
		}
		skus := make([]string, len(rows))
		titles := make([]string, len(rows))
		cents := make([]int64, len(rows))
		for i, r := range rows {
			skus[i], titles[i], cents[i] = r.SKU, r.Title, r.Cents
		}
		_, err := tx.Exec(ctx, `INSERT INTO products (sku, title, cents) SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[])
			ON CONFLICT (sku) DO UPDATE SET title = EXCLUDED.title, cents = EXCLUDED.cents`, skus, titles, cents)
		return err
	})

	c, err := consumer.New(src, h, consumer.Config{Name: "feed-ingest"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
