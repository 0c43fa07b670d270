// Package payroll issues payslips for a payroll run, one message per employee.
package payroll

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"

	"heldout4/payroll/payrolldb"
)

type payslipRequested struct {
	RunID           string `json:"run_id"`
	EmployeeID      string `json:"employee_id"`
	DeductionsCents int64  `json:"deductions_cents"`
}

// Issuer writes one payslip per payslip.requested message.
type Issuer struct {
	q *payrolldb.Queries
}

// NewIssuer returns an Issuer whose read queries run on q.
func NewIssuer(q *payrolldb.Queries) *Issuer { return &Issuer{q: q} }

func (i *Issuer) handle(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var ev payslipRequested
	if err := json.Unmarshal(msg.Body, &ev); err != nil {
		return consumer.Permanent(fmt.Errorf("decode payslip request: %w", err))
	}
	q := i.q.WithTx(tx)
	emp, err := q.GetEmployee(ctx, ev.EmployeeID)
	if err != nil {
		return fmt.Errorf("load employee %s: %w", ev.EmployeeID, err)
	}
	err = q.InsertPayslip(ctx, payrolldb.InsertPayslipParams{
		RunID:      ev.RunID,
		EmployeeID: emp.ID,
		GrossCents: emp.GrossCents,
		NetCents:   netPay(emp.GrossCents, ev.DeductionsCents),
	})
	if err != nil {
		return fmt.Errorf("insert payslip: %w", err)
	}
	if err := i.q.IncrementRunIssued(ctx, ev.RunID); err != nil { // want "run progress written through the pool queries, outside the claim transaction"
		return fmt.Errorf("count payslip: %w", err)
	}
	return nil
}

func netPay(gross, deductions int64) int64 {
	tax := gross * 22 / 100
	return gross - tax - deductions
}
