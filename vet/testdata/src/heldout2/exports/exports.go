// Package exports records export requests, enriched with the customer's
// plan fetched from the billing API.
package exports

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

type planClient struct {
	http *http.Client
	base string
}

func (p planClient) plan(ctx context.Context, customer string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.base+"/customers/"+customer+"/plan", nil)
	if err != nil {
		return "", err
	}
	resp, err := p.http.Do(req)
	if err != nil {
		return "", fmt.Errorf("plan: %w", err)
	}
	defer resp.Body.Close()
	var out struct{ Plan string }
	return out.Plan, json.NewDecoder(resp.Body).Decode(&out)
}

type requester struct {
	plans planClient
}

func (r *requester) handle(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	plan, err := r.plans.plan(ctx, msg.Key)
	if err != nil {
		return err
	}
	limit := 10_000
	if plan == "enterprise" {
		limit = 1_000_000
	}
	_, err = tx.Exec(ctx, `INSERT INTO export_jobs (id, customer, row_limit) VALUES ($1, $2, $3)`, msg.ID, msg.Key, limit)
	return err
}

// Run prepares the tables and wires the export consumer.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker) error {
	if _, err := pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS export_jobs (id text PRIMARY KEY, customer text, row_limit int)`); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if _, err := pool.Exec(ctx, `UPDATE export_jobs SET row_limit = 10000 WHERE row_limit IS NULL`); err != nil {
		return fmt.Errorf("backfill: %w", err)
	}
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "exports.requested", "exports")
	if err != nil {
		return err
	}
	r := &requester{plans: planClient{http: http.DefaultClient, base: "https://billing.internal"}}
	c, err := consumer.New(src, postgres.HandlerFunc(r.handle), consumer.Config{Name: "exports"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
