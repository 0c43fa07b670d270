// Package pgprices stores prices in Postgres.
package pgprices

import (
	"context"

	"github.com/jackc/pgx/v5"

	"heldout8/pricing/catalog"
)

// Execer runs a statement.
type Execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgx.CommandTag, error)
}

// Prices is the Postgres PriceRepository.
type Prices struct{ db Execer }

// New returns prices stored through db.
func New(db Execer) *Prices { return &Prices{db: db} }

// Save upserts p.
func (r *Prices) Save(ctx context.Context, p catalog.Price) error {
	_, err := r.db.Exec(ctx, `INSERT INTO prices (sku, market, cents) VALUES ($1, $2, $3)
		ON CONFLICT (sku, market) DO UPDATE SET cents = EXCLUDED.cents`, p.SKU, p.Market, p.Cents)
	return err
}
