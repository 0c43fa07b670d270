// Package payroll computes payslips from approved timesheets.
package payroll

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"

	"heldout6/payroll/taxtable"
)

type timesheetApproved struct {
	Employee     string `json:"employee"`
	Jurisdiction string `json:"jurisdiction"`
	GrossCts     int64  `json:"gross_cents"`
	Period       string `json:"period"`
}

// Payslips issues one payslip per approved timesheet.
type Payslips struct {
	Tax  *taxtable.Reader
	Pool *pgxpool.Pool
}

func (p *Payslips) issue(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var t timesheetApproved
	if err := json.Unmarshal(msg.Body, &t); err != nil {
		return consumer.Permanent(err)
	}
	var ytd int64
	if err := p.Pool.QueryRow(ctx, `SELECT coalesce(sum(gross_cents), 0) FROM payslips WHERE employee = $1`, t.Employee).Scan(&ytd); err != nil {
		return err
	}
	bp, err := p.Tax.RateBasisPoints(ctx, t.Jurisdiction, (ytd+t.GrossCts)*12)
	if err != nil {
		return err
	}
	withheld := t.GrossCts * bp / 10000
	_, err = tx.Exec(ctx, `INSERT INTO payslips (employee, period, gross_cents, withheld_cents) VALUES ($1, $2, $3, $4)`,
		t.Employee, t.Period, t.GrossCts, withheld)
	return err
}

// Run starts the payslip consumer.
func Run(ctx context.Context, src consumer.Source, pool *pgxpool.Pool) error {
	p := &Payslips{Tax: &taxtable.Reader{Pool: pool}, Pool: pool}
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	c, err := consumer.New(src, postgres.HandlerFunc(p.issue), consumer.Config{Name: "payroll-payslips"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
