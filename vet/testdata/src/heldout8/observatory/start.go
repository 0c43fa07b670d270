package observatory

import (
	"context"
	"database/sql"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

// Start consumes observations from RabbitMQ; replica is the catalogue's
// read-only database.
func Start(ctx context.Context, pool *pgxpool.Pool, replica *sql.DB, log *slog.Logger) error {
	cat, err := openCatalog(ctx, replica)
	if err != nil {
		return err
	}
	f := &Filer{catalog: cat, archive: replica, maxDelta: 0.75}
	if n, err := f.variableCandidates(ctx); err == nil {
		log.Info("observatory starting", "variable_candidates", n)
	}
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	b, err := adapters.Open(ctx, "amqp://obs:obs@mq.observatory:5672/")
	if err != nil {
		return err
	}
	src, err := b.Source(ctx, "telescope.observations", "observation-filer")
	if err != nil {
		return err
	}
	c, err := consumer.New(src, postgres.BatchHandlerFunc(f.FileBatch), consumer.Config{Name: "observation-filer"},
		middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
