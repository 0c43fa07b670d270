package usagemeter

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/redis/go-redis/v9"
)

type usageRecorded struct {
	Tenant string `json:"tenant"`
	Period string `json:"period"`
	Metric string `json:"metric"`
	Units  int64  `json:"units"`
}

type planChanged struct {
	Tenant string `json:"tenant"`
	Plan   string `json:"plan"`
}

// meter keeps per-tenant usage; the API gateway reads the Redis counters to
// enforce quotas.
type meter struct {
	rdb *redis.Client
}

func (m *meter) recordUsage(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var u usageRecorded
	if err := json.Unmarshal(msg.Body, &u); err != nil {
		return consumer.Permanent(err)
	}
	if _, err := tx.Exec(ctx,
		`INSERT INTO usage (tenant, period, metric, units) VALUES ($1, $2, $3, $4)
		 ON CONFLICT (tenant, period, metric) DO UPDATE SET units = usage.units + EXCLUDED.units`,
		u.Tenant, u.Period, u.Metric, u.Units); err != nil {
		return fmt.Errorf("usagemeter: record: %w", err)
	}
	if err := m.rdb.Incr(ctx, "quota:"+u.Tenant+":"+u.Period).Err(); err != nil { // want "quota counter incremented in Redis inside the transactional handler; repeats on redelivery"
		return fmt.Errorf("usagemeter: bump quota counter: %w", err)
	}
	return nil
}

func (m *meter) resetUsage(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var u usageRecorded
	if err := json.Unmarshal(msg.Body, &u); err != nil {
		return consumer.Permanent(err)
	}
	_, err := tx.Exec(ctx, `DELETE FROM usage WHERE tenant = $1 AND period = $2`, u.Tenant, u.Period)
	return err
}

func (m *meter) changePlan(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var p planChanged
	if err := json.Unmarshal(msg.Body, &p); err != nil {
		return consumer.Permanent(err)
	}
	_, err := tx.Exec(ctx, `UPDATE tenants SET plan = $2 WHERE id = $1`, p.Tenant, p.Plan)
	return err
}
