package payroll

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"heldout3/payroll/audit"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

var errNoClaim = errors.New("payroll: no claim transaction in context; is the handler behind middleware.Idempotency?")

type payslipIssued struct {
	PayslipID  string `json:"payslip_id"`
	EmployeeID string `json:"employee_id"`
	Period     string `json:"period"`
	GrossCents int64  `json:"gross_cents"`
	NetCents   int64  `json:"net_cents"`
}

// payslipHandler stores issued payslips and keeps the audit trail HR asks for.
type payslipHandler struct {
	audit *audit.Recorder
	log   *slog.Logger
}

func (h *payslipHandler) Handle(ctx context.Context, msg *consumer.Message) error {
	tx, ok := postgres.Tx(ctx)
	if !ok {
		return errNoClaim
	}
	var p payslipIssued
	if err := json.Unmarshal(msg.Body, &p); err != nil {
		return consumer.Permanent(fmt.Errorf("payroll: decode payslip: %w", err))
	}
	if _, err := tx.Exec(ctx,
		`INSERT INTO payslips (id, employee_id, period, gross_cents, net_cents) VALUES ($1, $2, $3, $4, $5)`,
		p.PayslipID, p.EmployeeID, p.Period, p.GrossCents, p.NetCents); err != nil {
		return fmt.Errorf("payroll: insert payslip: %w", err)
	}
	if err := h.audit.Record(ctx, "payroll-consumer", "payslip.issued", p.EmployeeID); err != nil { // want "audit entry written through the audit package's sql.DB, outside the claim's transaction"
		return err
	}
	h.log.InfoContext(ctx, "payslip stored", "payslip", p.PayslipID, "period", p.Period)
	return nil
}
