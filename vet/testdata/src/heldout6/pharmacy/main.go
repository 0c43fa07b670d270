package pharmacy

import (
	"context"
	"database/sql"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

// Run starts the dispensing consumer.
func Run(ctx context.Context, src consumer.Source, pool *pgxpool.Pool, legacy *sql.DB) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	c, err := consumer.New(src, &Dispenser{DB: legacy}, consumer.Config{Name: "pharmacy-dispense", Concurrency: 4},
		middleware.Logging(), middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
