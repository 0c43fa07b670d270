// Package timesheets locks approved time sheets for payroll.
package timesheets

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type sheetApproved struct {
	SheetID    string  `json:"sheet_id"`
	EmployeeID string  `json:"employee_id"`
	Hours      float64 `json:"hours"`
	Overtime   float64 `json:"overtime_hours"`
}

type approvals struct {
	maxOvertime float64
}

func (a approvals) Handle(ctx context.Context, msg *consumer.Message) error {
	var s sheetApproved
	if err := json.Unmarshal(msg.Body, &s); err != nil {
		return consumer.Permanent(fmt.Errorf("decode sheet: %w", err))
	}
	if s.Overtime > a.maxOvertime {
		return consumer.Permanent(fmt.Errorf("sheet %s: %.1f overtime hours exceed the agreement", s.SheetID, s.Overtime))
	}
	tx, ok := postgres.Tx(ctx)
	if !ok {
		return fmt.Errorf("timesheets: no claim transaction")
	}
	if _, err := tx.Exec(ctx, `UPDATE time_sheets SET locked = true, hours = $2, overtime_hours = $3 WHERE id = $1`, s.SheetID, s.Hours, s.Overtime); err != nil {
		return fmt.Errorf("lock sheet: %w", err)
	}
	_, err := tx.Exec(ctx, `UPDATE overtime_balance SET used = used + $2 WHERE employee_id = $1`, s.EmployeeID, s.Overtime)
	return err
}
