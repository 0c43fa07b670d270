// Package svc holds what every fleet handler is built with.
package svc

import (
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Deps are the shared dependencies, embedded in each handler.
type Deps struct {
	DB  *pgxpool.Pool
	Log *slog.Logger
	Now func() time.Time
}

// NewDeps returns Deps over db, with the wall clock.
func NewDeps(db *pgxpool.Pool, log *slog.Logger) Deps {
	return Deps{DB: db, Log: log, Now: time.Now}
}
