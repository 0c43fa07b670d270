// Package quotas meters API usage against plan quotas.
package quotas

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"

	"heldout/platform/pipeline"
)

type usageReported struct {
	TenantID string `json:"tenant_id"`
	Metric   string `json:"metric"`
	Units    int64  `json:"units"`
	Period   string `json:"period"`
}

type meter struct{}

func (meter) record(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var u usageReported
	if err := json.Unmarshal(msg.Body, &u); err != nil {
		return consumer.Permanent(err)
	}
	var used, limit int64
	err := tx.QueryRow(ctx,
		`INSERT INTO usage (tenant_id, metric, period, units) VALUES ($1, $2, $3, $4)
		 ON CONFLICT (tenant_id, metric, period) DO UPDATE SET units = usage.units + EXCLUDED.units
		 RETURNING units, (SELECT quota FROM plan_quotas WHERE tenant_id = $1 AND metric = $2)`,
		u.TenantID, u.Metric, u.Period, u.Units).Scan(&used, &limit)
	if err != nil {
		return err
	}
	if used > limit {
		_, err = tx.Exec(ctx, `UPDATE tenants SET throttled = true WHERE id = $1`, u.TenantID)
	}
	return err
}

// Run consumes usage.reported with the platform's standard middleware.
func Run(ctx context.Context, broker adapters.Broker, pool *pgxpool.Pool) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "usage.reported", "quotas")
	if err != nil {
		return err
	}
	c, err := consumer.New(src, postgres.HandlerFunc(meter{}.record), consumer.Config{Name: "quotas", Concurrency: 16},
		pipeline.Standard(st)...)
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
