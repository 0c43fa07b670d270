// Package bookings confirms hotel bookings.
package bookings

import (
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Option configures a Confirmer.
type Option func(*Confirmer)

// WithLogger sets the logger; the default is slog.Default().
func WithLogger(l *slog.Logger) Option { return func(c *Confirmer) { c.log = l } }

// WithHoldTTL sets how long a room hold lasts; the default is 15 minutes.
func WithHoldTTL(d time.Duration) Option { return func(c *Confirmer) { c.holdTTL = d } }

// NewConfirmer returns a Confirmer over pool.
func NewConfirmer(pool *pgxpool.Pool, opts ...Option) *Confirmer {
	c := &Confirmer{pool: pool, log: slog.Default(), holdTTL: 15 * time.Minute}
	for _, o := range opts {
		o(c)
	}
	return c
}
