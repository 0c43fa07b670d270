// Package wiring builds a service's dependencies once, at start.
package wiring

import (
	"context"

	"corpus/internal/orderdb"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Deps are the service's shared dependencies.
type Deps struct {
	Orders *orderdb.Queries
	Health func(ctx context.Context) error
}

// Build wires Deps over pool.
func Build(pool *pgxpool.Pool) *Deps {
	return &Deps{
		Orders: orderdb.New(pool),
		Health: pool.Ping,
	}
}
