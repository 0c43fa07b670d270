// Package coupons redeems coupons attached to orders.
package coupons

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
)

// ErrExhausted is returned for a coupon with no redemptions left.
var ErrExhausted = errors.New("coupon exhausted")

// Redeemer decrements coupon balances. It implements consumer.Handler.
type Redeemer struct {
	pool *pgxpool.Pool
}

type couponApplied struct {
	Code    string `json:"code"`
	OrderID string `json:"order_id"`
}

// Handle redeems the coupon once per order.
func (r *Redeemer) Handle(ctx context.Context, msg *consumer.Message) error {
	var ev couponApplied
	if err := json.Unmarshal(msg.Body, &ev); err != nil {
		return consumer.Permanent(err)
	}
	var left int
	if err := r.pool.QueryRow(ctx, `SELECT remaining FROM coupons WHERE code = $1`, ev.Code).Scan(&left); err != nil {
		return fmt.Errorf("coupon %s: %w", ev.Code, err)
	}
	if left <= 0 {
		return consumer.Permanent(ErrExhausted)
	}
	_, err := r.pool.Exec(ctx, `UPDATE coupons SET remaining = remaining - 1 WHERE code = $1`, ev.Code) // want "write through the pool behind Idempotency with the Postgres store"
	return err
}
