// Package payroll consumes issued payslips from the payroll engine.
package payroll

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"

	"heldout3/payroll/audit"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

// Run consumes payslips until ctx is done. pool is the payroll database,
// hrDB the HR database that holds the audit log.
func Run(ctx context.Context, pool *pgxpool.Pool, hrDB *sql.DB, broker adapters.Broker, log *slog.Logger) error {
	st, err := postgres.New(pool)
	if err != nil {
		return fmt.Errorf("payroll: store: %w", err)
	}
	src, err := broker.Source(ctx, "payroll.payslips", "payroll")
	if err != nil {
		return fmt.Errorf("payroll: source: %w", err)
	}
	h := &payslipHandler{audit: audit.NewRecorder(hrDB), log: log}
	c, err := consumer.New(src, h, consumer.Config{Name: "payroll", Concurrency: 4},
		middleware.Logging(), middleware.Idempotency(st))
	if err != nil {
		return fmt.Errorf("payroll: consumer: %w", err)
	}
	return c.Run(ctx)
}
