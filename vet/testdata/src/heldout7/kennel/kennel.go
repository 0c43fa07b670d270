// Package kennel records dog check-ins at the boarding kennels and mirrors
// them into the legacy front-desk database.
package kennel

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

// Deps are the kennel service's handles.
type Deps struct {
	Pool   *pgxpool.Pool
	Legacy *sql.DB // the front desk's database, reached through database/sql
	Broker adapters.Broker
}

// Run consumes check-in events until ctx ends.
func Run(ctx context.Context, d Deps) error {
	st, err := postgres.New(d.Pool)
	if err != nil {
		return fmt.Errorf("kennel: %w", err)
	}
	src, err := d.Broker.Source(ctx, "kennel.checkins", "kennel")
	if err != nil {
		return fmt.Errorf("kennel: %w", err)
	}
	c, err := consumer.New(src, &CheckinHandler{legacy: d.Legacy}, consumer.Config{Name: "kennel"},
		middleware.Logging(), middleware.Idempotency(st))
	if err != nil {
		return fmt.Errorf("kennel: %w", err)
	}
	return c.Run(ctx)
}
