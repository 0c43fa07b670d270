// Package reporting builds per-store daily sales summaries from closed tills.
package reporting

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

type tillClosed struct {
	StoreID  string    `json:"store_id"`
	Day      string    `json:"day"`
	Receipts []receipt `json:"receipts"`
}

type receipt struct {
	Lines []struct {
		Category string `json:"category"`
		Cents    int64  `json:"cents"`
	} `json:"lines"`
}

type categoryTotal struct {
	category string
	cents    int64
}

// summarise adds up the receipts per category, one goroutine per shard of
// receipts; it only computes.
func summarise(receipts []receipt, shards int) []categoryTotal {
	partial := make([]map[string]int64, shards)
	var wg sync.WaitGroup
	for s := 0; s < shards; s++ {
		wg.Add(1)
		go func(s int) {
			defer wg.Done()
			m := map[string]int64{}
			for i := s; i < len(receipts); i += shards {
				for _, l := range receipts[i].Lines {
					m[l.Category] += l.Cents
				}
			}
			partial[s] = m
		}(s)
	}
	wg.Wait()
	total := map[string]int64{}
	for _, m := range partial {
		for k, v := range m {
			total[k] += v
		}
	}
	out := make([]categoryTotal, 0, len(total))
	for k, v := range total {
		out = append(out, categoryTotal{k, v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].category < out[j].category })
	return out
}

func onTillClosed(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var ev tillClosed
	if err := json.Unmarshal(msg.Body, &ev); err != nil {
		return consumer.Permanent(err)
	}
	for _, t := range summarise(ev.Receipts, 4) {
		if _, err := tx.Exec(ctx,
			`INSERT INTO daily_sales (store_id, day, category, cents) VALUES ($1, $2, $3, $4)
			 ON CONFLICT (store_id, day, category) DO UPDATE SET cents = daily_sales.cents + EXCLUDED.cents`,
			ev.StoreID, ev.Day, t.category, t.cents); err != nil {
			return fmt.Errorf("category %s: %w", t.category, err)
		}
	}
	return nil
}

// Run consumes tills.closed.
func Run(ctx context.Context, broker adapters.Broker, pool *pgxpool.Pool) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "tills.closed", "reporting")
	if err != nil {
		return err
	}
	c, err := consumer.New(src, postgres.HandlerFunc(onTillClosed), consumer.Config{Name: "reporting"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
