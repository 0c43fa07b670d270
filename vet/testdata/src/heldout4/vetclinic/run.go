package vetclinic

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"

	"heldout4/vetclinic/platform/mw"
)

// Run files treatments until ctx ends.
func Run(ctx context.Context, log *slog.Logger, pool *pgxpool.Pool, broker adapters.Broker) error {
	src, err := broker.Source(ctx, "clinic.treatment-recorded", "treatment-filing")
	if err != nil {
		return err
	}
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	c, err := consumer.New(src, Filer{}, consumer.Config{Name: "treatment-filing"}, mw.Standard(log, st, 10*time.Second)...)
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
