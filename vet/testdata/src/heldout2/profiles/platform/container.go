// Package platform is the profiles service's dependency container.
package platform

import (
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/store/postgres"
)

// Container holds what handlers need; handlers embed it.
type Container struct {
	Pool   *pgxpool.Pool
	Claims *postgres.Store
	Log    *slog.Logger
}

// New builds the container over pool.
func New(pool *pgxpool.Pool) (*Container, error) {
	st, err := postgres.New(pool)
	if err != nil {
		return nil, err
	}
	return &Container{Pool: pool, Claims: st, Log: slog.Default()}, nil
}
