// Package policyquery renews insurance policies, reading reference data
// through the pool and writing only in the claim's transaction.
package policyquery

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

type renewal struct {
	PolicyID string `json:"policy_id"`
	Product  string `json:"product"`
}

// Renewer renews policies.
type Renewer struct {
	pool *pgxpool.Pool
}

func (r *Renewer) basePremium(ctx context.Context, product string) (int64, error) {
	var cents int64
	err := r.pool.QueryRow(ctx, `SELECT base_premium_cents FROM products WHERE code = $1`, product).Scan(&cents)
	return cents, err
}

func (r *Renewer) renew(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var ev renewal
	if err := json.Unmarshal(msg.Body, &ev); err != nil {
		return consumer.Permanent(err)
	}
	cents, err := r.basePremium(ctx, ev.Product)
	if err != nil {
		return fmt.Errorf("premium for %s: %w", ev.Product, err)
	}
	rows, err := r.pool.Query(ctx, `SELECT rider FROM product_riders WHERE product = $1`, ev.Product)
	if err != nil {
		return err
	}
	rows.Close()
	_, err = tx.Exec(ctx, `UPDATE policies SET term = term + 1, premium_cents = $2 WHERE id = $1`, ev.PolicyID, cents)
	return err
}

// Run consumes renewals.
func Run(ctx context.Context, pool *pgxpool.Pool, src consumer.Source) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	r := &Renewer{pool: pool}
	c, err := consumer.New(src, postgres.HandlerFunc(r.renew), consumer.Config{Name: "policyquery"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
