// Package platform holds the service's shared dependencies.
package platform

import (
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Deps is the dependency container every handler of the service embeds.
type Deps struct {
	Pool   *pgxpool.Pool
	Logger *slog.Logger
}

// NewDeps builds the container.
func NewDeps(pool *pgxpool.Pool) *Deps {
	return &Deps{Pool: pool, Logger: slog.Default()}
}
