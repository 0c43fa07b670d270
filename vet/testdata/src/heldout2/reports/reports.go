// Package reports builds daily sales summaries from closed-day events.
package reports

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
	"golang.org/x/sync/errgroup"
)

type sale struct {
	Store string `json:"store"`
	SKU   string `json:"sku"`
	Cents int64  `json:"cents"`
}

type summary struct {
	store string
	total int64
	top   string
}

// summaryRows feeds summaries to CopyFrom.
type summaryRows struct {
	rows []summary
	next int
}

func (r *summaryRows) Next() bool {
	r.next++
	return r.next <= len(r.rows)
}

func summarize(ctx context.Context, byStore map[string][]sale) ([]summary, error) {
	out := make([]summary, 0, len(byStore))
	results := make(chan summary, len(byStore))
	g, gctx := errgroup.WithContext(ctx)
	for store, sales := range byStore {
		g.Go(func() error {
			if err := gctx.Err(); err != nil {
				return err
			}
			perSKU := map[string]int64{}
			s := summary{store: store}
			for _, x := range sales {
				s.total += x.Cents
				perSKU[x.SKU] += x.Cents
			}
			for sku, c := range perSKU {
				if c > perSKU[s.top] {
					s.top = sku
				}
			}
			results <- s
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	close(results)
	for s := range results {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].store < out[j].store })
	return out, nil
}

func closeDay(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var sales []sale
	if err := json.Unmarshal(msg.Body, &sales); err != nil {
		return consumer.Permanent(err)
	}
	byStore := map[string][]sale{}
	for _, s := range sales {
		byStore[s.Store] = append(byStore[s.Store], s)
	}
	sums, err := summarize(ctx, byStore)
	if err != nil {
		return err
	}
	rows := &summaryRows{rows: sums}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"daily_summary"}, []string{"store", "total", "top_sku"}, rows); err != nil {
		return fmt.Errorf("copy summaries for %s: %w", msg.Key, err)
	}
	return nil
}

// Run wires the day-close consumer.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "days.closed", "reports")
	if err != nil {
		return err
	}
	c, err := consumer.New(src, postgres.HandlerFunc(closeDay), consumer.Config{Name: "reports"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
