// Package tenants provisions tenant schemas' bookkeeping rows.
package tenants

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/store/postgres"

	"heldout/platform/metrics"
	"heldout/platform/pipeline"
)

var provisioned = metrics.NewCounter("tenants_provisioned_total")

type tenantCreated struct {
	TenantID string `json:"tenant_id"`
	Plan     string `json:"plan"`
	Region   string `json:"region"`
}

func provision(ctx context.Context, tx pgx.Tx, ev tenantCreated) error {
	if _, err := tx.Exec(ctx, `INSERT INTO tenants (id, plan, region) VALUES ($1, $2, $3)`, ev.TenantID, ev.Plan, ev.Region); err != nil {
		return fmt.Errorf("tenant %s: %w", ev.TenantID, err)
	}
	for _, feature := range []string{"api", "sso", "audit"} {
		if _, err := tx.Exec(ctx, `INSERT INTO tenant_features (tenant_id, feature) VALUES ($1, $2)`, ev.TenantID, feature); err != nil {
			return err
		}
	}
	provisioned.Inc(ev.Plan)
	return nil
}

// Run consumes tenants.created.
func Run(ctx context.Context, broker adapters.Broker, pool *pgxpool.Pool) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	return pipeline.Run(ctx, broker, st, pipeline.Spec{
		Source:      "tenants.created",
		Name:        "tenants",
		Concurrency: 2,
		Handler:     pipeline.Typed(provision),
	})
}
