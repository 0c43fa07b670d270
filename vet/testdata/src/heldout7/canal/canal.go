// Package canal books boat passages through the canal's locks, checking
// each lock's water level with the lock-keepers' gauges first.
package canal

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

// Config configures the passage consumer.
type Config struct {
	// GaugeURL is the gauge service's base URL; required.
	GaugeURL string
	// MinDraughtCm is the least water over the sill a passage needs;
	// default 150.
	MinDraughtCm int
}

// Passages books lock passages.
type Passages struct {
	gauges   string
	minCm    int
	client   *http.Client
	timeouts time.Duration
}

// Run consumes passage requests until ctx ends.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker, cfg Config) error {
	if cfg.GaugeURL == "" {
		return fmt.Errorf("canal: GaugeURL is required")
	}
	if cfg.MinDraughtCm == 0 {
		cfg.MinDraughtCm = 150
	}
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "canal.passages", "canal-locks")
	if err != nil {
		return err
	}
	p := &Passages{gauges: cfg.GaugeURL, minCm: cfg.MinDraughtCm, client: &http.Client{}, timeouts: 3 * time.Second}
	c, err := consumer.New(src, p, consumer.Config{Name: "canal-locks"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
