package lumberyard

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Stock keeps board counts per SKU. It writes through its own pool: the
// yard's stock screen adjusts counts by hand.
type Stock struct {
	pool *pgxpool.Pool
}

// NewStock returns stock over pool.
func NewStock(pool *pgxpool.Pool) *Stock { return &Stock{pool: pool} }

// Adjust adds delta boards to sku.
func (s *Stock) Adjust(ctx context.Context, sku string, delta int) error {
	if _, err := s.pool.Exec(ctx, `UPDATE board_stock SET boards = boards + $2 WHERE sku = $1`, sku, delta); err != nil {
		return fmt.Errorf("adjust %s: %w", sku, err)
	}
	return nil
}

// Count returns the boards in stock for sku.
func (s *Stock) Count(ctx context.Context, sku string) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, `SELECT boards FROM board_stock WHERE sku = $1`, sku).Scan(&n)
	return n, err
}
