// Package carnival counts ride scans per visitor wristband and closes each
// visitor's session when they leave the park.
package carnival

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

// visit is what the park knows about a wristband while it is in the park.
type visit struct {
	wristband string
	rides     int
	lastScan  time.Time
	tx        pgx.Tx // the transaction of the latest scan
}

// sessions keeps the visits of wristbands in the park.
type sessions struct {
	mu     sync.Mutex
	visits map[string]*visit
}

func (s *sessions) get(wristband string) *visit {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.visits[wristband]
	if !ok {
		v = &visit{wristband: wristband}
		s.visits[wristband] = v
	}
	return v
}

// Park holds the ride-scan consumer's state.
type Park struct {
	sessions *sessions
	idle     time.Duration
	log      *slog.Logger
}

// Run consumes ride scans until ctx ends, and closes idle visits every minute.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker, log *slog.Logger) error {
	st, err := postgres.New(pool)
	if err != nil {
		return fmt.Errorf("carnival: %w", err)
	}
	src, err := broker.Source(ctx, "carnival.scans", "carnival-rides")
	if err != nil {
		return fmt.Errorf("carnival: %w", err)
	}
	p := &Park{sessions: &sessions{visits: map[string]*visit{}}, idle: 30 * time.Minute, log: log}
	go p.closeIdle(ctx, time.Minute)
	c, err := consumer.New(src, postgres.HandlerFunc(p.scan), consumer.Config{Name: "carnival-rides", Concurrency: 8},
		middleware.Logging(), middleware.Idempotency(st))
	if err != nil {
		return fmt.Errorf("carnival: %w", err)
	}
	return c.Run(ctx)
}
