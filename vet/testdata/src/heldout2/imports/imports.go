// Package imports loads partner product feeds in parallel chunks.
package imports

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
	"golang.org/x/sync/errgroup"
)

const chunk = 500

func chunks(rows [][]string) [][][]string {
	var out [][][]string
	for len(rows) > chunk {
		out = append(out, rows[:chunk])
		rows = rows[chunk:]
	}
	return append(out, rows)
}

func loadFeed(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	rows, err := csv.NewReader(bytes.NewReader(msg.Body)).ReadAll()
	if err != nil {
		return consumer.Permanent(fmt.Errorf("feed %s: %w", msg.ID, err))
	}
	g, gctx := errgroup.WithContext(ctx)
	for _, part := range chunks(rows) {
		g.Go(func() error { // want "errgroup"
			for _, r := range part {
				if _, err := tx.Exec(gctx, `INSERT INTO feed_items (partner, sku, title) VALUES ($1, $2, $3)`, msg.Key, r[0], r[1]); err != nil {
					return err
				}
			}
			return nil
		})
	}
	return g.Wait()
}

// Run wires the feed importer.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "partner.feeds", "feed-import")
	if err != nil {
		return err
	}
	c, err := consumer.New(src, postgres.HandlerFunc(loadFeed), consumer.Config{Name: "feed-import"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
