// Package shiftswap applies shift swaps that both employees and the manager
// agreed to.
package shiftswap

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
)

type swapApproved struct {
	SwapID string `json:"swap_id"`
	ShiftA string `json:"shift_a"`
	ShiftB string `json:"shift_b"`
}

type swapper struct {
	shifts *shiftRepo
}

func (h *swapper) apply(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var ev swapApproved
	if err := json.Unmarshal(msg.Body, &ev); err != nil {
		return consumer.Permanent(fmt.Errorf("decode swap: %w", err))
	}
	h.shifts.tx = tx // want "claim transaction stored in the shared repository, outliving the handler"
	a, err := h.shifts.get(ctx, ev.ShiftA)
	if err != nil {
		return err
	}
	b, err := h.shifts.get(ctx, ev.ShiftB)
	if err != nil {
		return err
	}
	if a.Role != b.Role {
		return consumer.Permanent(fmt.Errorf("swap %s: roles differ (%s, %s)", ev.SwapID, a.Role, b.Role))
	}
	if err := h.shifts.assign(ctx, a.ID, b.EmployeeID); err != nil {
		return fmt.Errorf("assign %s: %w", a.ID, err)
	}
	if err := h.shifts.assign(ctx, b.ID, a.EmployeeID); err != nil {
		return fmt.Errorf("assign %s: %w", b.ID, err)
	}
	_, err = tx.Exec(ctx, `UPDATE swap_requests SET state = 'applied' WHERE id = $1`, ev.SwapID)
	return err
}
