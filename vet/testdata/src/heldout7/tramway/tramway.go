// Package tramway records tram departures, works out each one's delay
// against the published timetable, and announces delays to passengers.
package tramway

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

// Config configures the departures consumer.
type Config struct {
	// TimetableURL is the timetable service's base URL; required.
	TimetableURL string
	// DelayThreshold is the delay from which passengers are told;
	// default 3 minutes.
	DelayThreshold time.Duration
	// Announcements is the outbox destination of delay notices; default
	// "passenger.announcements".
	Announcements string
}

// Dispatcher handles departures.
type Dispatcher struct {
	cfg    Config
	client *http.Client
}

// NewDispatcher returns a dispatcher with cfg's defaults applied.
func NewDispatcher(cfg Config) *Dispatcher {
	if cfg.DelayThreshold == 0 {
		cfg.DelayThreshold = 3 * time.Minute
	}
	if cfg.Announcements == "" {
		cfg.Announcements = "passenger.announcements"
	}
	return &Dispatcher{cfg: cfg, client: &http.Client{Timeout: 2 * time.Second}}
}

// Run consumes departures until ctx ends.
func (d *Dispatcher) Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker) error {
	if d.cfg.TimetableURL == "" {
		return fmt.Errorf("tramway: TimetableURL is required")
	}
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "trams.departures", "tramway-dispatch")
	if err != nil {
		return err
	}
	c, err := consumer.New(src, postgres.HandlerFunc(d.departed), consumer.Config{Name: "tramway-dispatch"},
		middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
