package payroll

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"

	"heldout4/payroll/payrolldb"
)

// Run consumes payslip requests until ctx ends.
func Run(ctx context.Context, pool *pgxpool.Pool, brokerURL string) error {
	broker, err := adapters.Open(ctx, brokerURL)
	if err != nil {
		return fmt.Errorf("open broker: %w", err)
	}
	src, err := broker.Source(ctx, "payroll.payslip-requested", "payslip-issuer")
	if err != nil {
		return fmt.Errorf("source: %w", err)
	}
	st, err := postgres.New(pool)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	issuer := NewIssuer(payrolldb.New(pool))
	c, err := consumer.New(src, postgres.HandlerFunc(issuer.handle),
		consumer.Config{Name: "payslip-issuer", Concurrency: 4},
		middleware.Logging(), middleware.Idempotency(st))
	if err != nil {
		return fmt.Errorf("consumer: %w", err)
	}
	return c.Run(ctx)
}
