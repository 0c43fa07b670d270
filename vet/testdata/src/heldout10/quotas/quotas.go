// Package quotas counts storage usage per tenant from NATS events and blocks
// uploads over the plan's limit. Plan limits are loaded once, lazily.
package quotas

import (
	"context"
	"encoding/json"
	"sync"

	"example.com/platform"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

// Config wires the service.
type Config struct {
	NATS string
	Pool *pgxpool.Pool
}

// Run consumes storage events until ctx ends.
func Run(ctx context.Context, cfg Config) error {
	var (
		once    sync.Once
		limits  = map[string]int64{}
		loadErr error
	)
	loadLimits := func(ctx context.Context) {
		var free, pro int64
		loadErr = cfg.Pool.QueryRow(ctx, `SELECT
			(SELECT bytes FROM plan_limits WHERE plan = 'free'),
			(SELECT bytes FROM plan_limits WHERE plan = 'pro')`).Scan(&free, &pro)
		limits["free"], limits["pro"] = free, pro
	}

	st, err := postgres.New(cfg.Pool)
	if err != nil {
		return err
	}
	b, err := adapters.Open(ctx, cfg.NATS)
	if err != nil {
		return err
	}
	src, err := b.Source(ctx, "storage.changed", "quotas")
	if err != nil {
		return err
	}

	h := postgres.HandlerFunc(func(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
		once.Do(func() { loadLimits(context.WithoutCancel(ctx)) })
		if loadErr != nil {
			return loadErr
		}
		var ev struct {
			Tenant string `json:"tenant"`
			Plan   string `json:"plan"`
			Delta  int64  `json:"delta"`
		}
		if err := json.Unmarshal(msg.Body, &ev); err != nil {
			return consumer.Permanent(err)
		}
		var used int64
		if err := tx.QueryRow(ctx, `UPDATE tenant_usage SET bytes = bytes + $2 WHERE tenant_id = $1 RETURNING bytes`, ev.Tenant, ev.Delta).Scan(&used); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE tenants SET uploads_blocked = $2 WHERE id = $1`, ev.Tenant, used > limits[ev.Plan])
		return err
	})

	c, err := consumer.New(src, h, consumer.Config{Name: "quotas"}, middleware.Logging(), platform.Dedupe(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
