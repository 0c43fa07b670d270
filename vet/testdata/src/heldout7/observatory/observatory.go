// Package observatory schedules telescope time from accepted proposals and
// tells the dome controller about each night's plan.
package observatory

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

// Config configures the scheduler.
type Config struct {
	// DomeURL is the dome controller's API; required.
	DomeURL string
	// Timeout bounds each call to the dome controller; default 5s.
	Timeout time.Duration
}

// Scheduler books observing slots.
type Scheduler struct {
	dome    string
	http    *http.Client
	minutes int
}

// NewScheduler returns a scheduler talking to the dome controller.
func NewScheduler(cfg Config) (*Scheduler, error) {
	if cfg.DomeURL == "" {
		return nil, fmt.Errorf("observatory: DomeURL is required")
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 5 * time.Second
	}
	return &Scheduler{dome: cfg.DomeURL, http: &http.Client{Timeout: cfg.Timeout}, minutes: 30}, nil
}

// Run consumes accepted proposals until ctx ends.
func (s *Scheduler) Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "proposals.accepted", "observatory-scheduler")
	if err != nil {
		return err
	}
	c, err := consumer.New(src, postgres.HandlerFunc(s.schedule), consumer.Config{Name: "observatory-scheduler"},
		middleware.Logging(), middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
