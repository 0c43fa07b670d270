// Package app builds the clinic scheduler's dependencies once at start-up.
package app

import (
	"github.com/jackc/pgx/v5/pgxpool"

	"heldout4/clinicslots/audit"
)

// Container holds the long-lived dependencies shared by every handler.
type Container struct {
	DB    *pgxpool.Pool
	Audit *audit.Recorder
	Clock func() int64
}

// New wires the container over pool.
func New(pool *pgxpool.Pool) *Container {
	return &Container{DB: pool, Audit: audit.NewRecorder(pool)}
}
