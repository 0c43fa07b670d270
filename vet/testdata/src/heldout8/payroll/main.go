package payroll

import (
	"context"
	"database/sql"
	"log/slog"
	"os"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

// Start wires the payslip consumer on SQS.
func Start(ctx context.Context, pool *pgxpool.Pool, legacy *sql.DB) error {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	proc := NewPayslipProcessor(legacy, log)

	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	b, err := adapters.Open(ctx, "sqs://eu-west-1?endpoint="+os.Getenv("SQS_ENDPOINT"))
	if err != nil {
		return err
	}
	src, err := b.Source(ctx, "payslips-approved", "payroll-ledger")
	if err != nil {
		return err
	}
	c, err := consumer.New(src, postgres.HandlerFunc(proc.Process), consumer.Config{Name: "payroll-ledger"},
		middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
