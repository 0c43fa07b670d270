package courier

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"

	"heldout8/courier/pgtrack"
	"heldout8/shared/tenant"
)

// Run consumes scans from Redis Streams.
func Run(ctx context.Context, pool *pgxpool.Pool, depots []string) error {
	known := map[string]bool{}
	for _, d := range depots {
		known[d] = true
	}
	h := ScanHandler{Tracker: pgtrack.New(pool), Depots: known}

	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	b, err := adapters.Open(ctx, "redis://courier-redis:6379/0")
	if err != nil {
		return err
	}
	src, err := b.Source(ctx, "handheld.scans", "scan-recorder")
	if err != nil {
		return err
	}
	c, err := consumer.New(src, h, consumer.Config{Name: "scan-recorder", Concurrency: 8},
		tenant.FromHeader(), middleware.Logging(), middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
