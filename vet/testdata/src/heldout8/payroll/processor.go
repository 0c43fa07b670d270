// Package payroll books approved payslips into the general ledger and keeps
// the legacy reporting journal in step.
package payroll

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"

	"heldout8/shared/envelope"
)

// ErrUnbalanced is returned for a payslip whose lines do not sum to its net pay.
var ErrUnbalanced = errors.New("payslip lines do not balance")

type payslip struct {
	EmployeeID string `json:"employee_id"`
	Period     string `json:"period"`
	NetCents   int64  `json:"net_cents"`
	Lines      []line `json:"lines"`
}

type line struct {
	Account string `json:"account"`
	Cents   int64  `json:"cents"`
}

// PayslipProcessor is the use case "book an approved payslip".
type PayslipProcessor struct {
	legacy *sql.DB // the reporting database the finance team still reads
	log    *slog.Logger
}

// NewPayslipProcessor returns a processor writing the legacy journal to legacy.
func NewPayslipProcessor(legacy *sql.DB, log *slog.Logger) *PayslipProcessor {
	return &PayslipProcessor{legacy: legacy, log: log}
}

// Process books one payslip in the claim's transaction.
func (p *PayslipProcessor) Process(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var slip payslip
	if _, err := envelope.Open(msg, &slip); err != nil {
		return err
	}
	if err := p.validate(slip); err != nil {
		return consumer.Permanent(err)
	}
	for _, l := range slip.Lines {
		if err := p.postLine(ctx, tx, slip, l); err != nil {
			return err
		}
	}
	if err := p.markPaid(ctx, tx, slip); err != nil {
		return err
	}
	return p.appendLegacyJournal(ctx, slip)
}

func (p *PayslipProcessor) validate(s payslip) error {
	var sum int64
	for _, l := range s.Lines {
		sum += l.Cents
	}
	if sum != s.NetCents {
		return fmt.Errorf("%s %s: %w (%d != %d)", s.EmployeeID, s.Period, ErrUnbalanced, sum, s.NetCents)
	}
	return nil
}

func (p *PayslipProcessor) postLine(ctx context.Context, tx pgx.Tx, s payslip, l line) error {
	_, err := tx.Exec(ctx, `INSERT INTO gl_postings (account, employee_id, period, cents) VALUES ($1, $2, $3, $4)`,
		p.normalise(l.Account), s.EmployeeID, s.Period, l.Cents)
	return err
}

func (p *PayslipProcessor) markPaid(ctx context.Context, tx pgx.Tx, s payslip) error {
	_, err := tx.Exec(ctx, `UPDATE payslips SET status = 'booked' WHERE employee_id = $1 AND period = $2`,
		s.EmployeeID, s.Period)
	return err
}

func (p *PayslipProcessor) normalise(account string) string {
	return strings.ToUpper(strings.TrimSpace(account))
}

func (p *PayslipProcessor) appendLegacyJournal(ctx context.Context, s payslip) error {
	_, err := p.legacy.ExecContext(ctx, `INSERT INTO journal (ref, amount) VALUES ($1, $2)`, s.EmployeeID+"/"+s.Period, s.NetCents) // want "legacy journal written through the \\*sql.DB"
	if err != nil {
		p.log.ErrorContext(ctx, "legacy journal", "employee", s.EmployeeID, "err", err)
	}
	return err
}
