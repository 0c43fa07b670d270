package reportjobs

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

// Main runs the purge job next to the report consumer.
func Main(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	if _, err := pool.Exec(ctx, `CREATE INDEX IF NOT EXISTS reports_status_idx ON reports (status, updated_at)`); err != nil {
		return err
	}
	go (&Purger{Pool: pool, Every: time.Hour}).Run(ctx)
	src, err := broker.Source(ctx, "reports.filed", "reportjobs")
	if err != nil {
		return err
	}
	c, err := consumer.New(src, postgres.HandlerFunc(Filer{}.onFiled), consumer.Config{Name: "reportjobs"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
