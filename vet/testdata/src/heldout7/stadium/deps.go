// Package stadium sells match tickets from the box office's orders.
package stadium

import (
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/store/postgres"

	"heldout7/stadium/seating"
)

// Deps is the service's dependency container, built once in main.
type Deps struct {
	Log   *slog.Logger
	Pool  *pgxpool.Pool
	Store *postgres.Store
	Seats *seating.Map
}

// NewDeps builds the container over pool.
func NewDeps(pool *pgxpool.Pool, log *slog.Logger) (*Deps, error) {
	st, err := postgres.New(pool)
	if err != nil {
		return nil, err
	}
	return &Deps{Log: log, Pool: pool, Store: st, Seats: seating.NewMap(pool)}, nil
}
