// Package inventory keeps stock levels in step with reservations.
package inventory

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
)

type execFunc func(ctx context.Context, sql string, args ...any) (pgx.CommandTag, error)
type queryRowFunc func(ctx context.Context, sql string, args ...any) pgx.Row

// Stock applies reservations to stock levels.
type Stock struct {
	exec     execFunc
	queryRow queryRowFunc
	lowWater int
}

// NewStock returns a Stock over pool.
func NewStock(pool *pgxpool.Pool, lowWater int) *Stock {
	return &Stock{exec: pool.Exec, queryRow: pool.QueryRow, lowWater: lowWater}
}

// Level returns the units on hand for sku.
func (s *Stock) Level(ctx context.Context, sku string) (int, error) {
	var n int
	err := s.queryRow(ctx, `SELECT on_hand FROM stock_levels WHERE sku = $1`, sku).Scan(&n)
	return n, err
}

type reservation struct {
	ReservationID string `json:"reservation_id"`
	Lines         []struct {
		SKU      string `json:"sku"`
		Quantity int    `json:"qty"`
	} `json:"lines"`
}

func (s *Stock) reserve(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var r reservation
	if err := json.Unmarshal(msg.Body, &r); err != nil {
		return consumer.Permanent(err)
	}
	for _, l := range r.Lines {
		if _, err := tx.Exec(ctx,
			`INSERT INTO reservation_lines (reservation_id, sku, qty) VALUES ($1, $2, $3)`,
			r.ReservationID, l.SKU, l.Quantity); err != nil {
			return fmt.Errorf("line %s: %w", l.SKU, err)
		}
		if _, err := s.exec(ctx, `UPDATE stock_levels SET on_hand = on_hand - $2 WHERE sku = $1`, l.SKU, l.Quantity); err != nil { // want "stored pool.Exec method value"
			return fmt.Errorf("stock %s: %w", l.SKU, err)
		}
	}
	return nil
}
