// Package clickstream rolls up page views from Kafka into session counts, a
// batch at a time, and forwards sessions that converted to the ads team's
// topic.
package clickstream

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Config wires the service.
type Config struct {
	Brokers []string
	URL     string // kafka://...
	Pool    *pgxpool.Pool
}

type view struct {
	Session   string `json:"session"`
	Page      string `json:"page"`
	Converted bool   `json:"converted"`
}

// Run consumes page views until ctx ends.
func Run(ctx context.Context, cfg Config) error {
	ads, err := kgo.NewClient(kgo.SeedBrokers(cfg.Brokers...))
	if err != nil {
		return err
	}
	st, err := postgres.New(cfg.Pool)
	if err != nil {
		return err
	}
	b, err := adapters.Open(ctx, cfg.URL)
	if err != nil {
		return err
	}
	src, err := b.Source(ctx, "pageviews", "sessions")
	if err != nil {
		return err
	}

	rollup := postgres.BatchHandlerFunc(func(ctx context.Context, tx pgx.Tx, msgs []*consumer.Message) error {
		counts := map[string]int64{}
		var converted []*kgo.Record
		for _, m := range msgs {
			var v view
			if err := json.Unmarshal(m.Body, &v); err != nil {
				continue
			}
			counts[v.Session]++
			if v.Converted {
				converted = append(converted, &kgo.Record{Topic: "ads.conversions", Value: m.Body})
			}
		}
		ids := make([]string, 0, len(counts))
		ns := make([]int64, 0, len(counts))
		for id, n := range counts {
			ids = append(ids, id)
			ns = append(ns, n)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO sessions (id, views) SELECT * FROM unnest($1::text[], $2::bigint[])
			ON CONFLICT (id) DO UPDATE SET views = sessions.views + EXCLUDED.views`, ids, ns); err != nil {
			return err
		}
		if len(converted) == 0 {
			return nil
		}
		var errs []error
		for _, r := range ads.ProduceSync(ctx, converted...) { // want "."
			errs = append(errs, r.Err)
		}
		return errors.Join(errs...)
	})

	c, err := consumer.New(src, rollup, consumer.Config{Name: "sessions", Concurrency: 4}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
