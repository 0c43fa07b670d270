// Package clinicslots books appointment slots requested by the patient portal.
package clinicslots

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"

	"heldout4/clinicslots/app"
)

type bookingRequested struct {
	SlotID    string `json:"slot_id"`
	PatientID string `json:"patient_id"`
	Channel   string `json:"channel"`
}

var errNoTx = errors.New("clinicslots: handler runs without the claim's transaction")

// BookingHandler reserves a slot for a patient.
type BookingHandler struct {
	c *app.Container
}

// Handle books the slot in the claim's transaction.
func (h *BookingHandler) Handle(ctx context.Context, msg *consumer.Message) error {
	var req bookingRequested
	if err := json.Unmarshal(msg.Body, &req); err != nil {
		return consumer.Permanent(fmt.Errorf("decode booking: %w", err))
	}
	tx, ok := postgres.Tx(ctx)
	if !ok {
		return errNoTx
	}
	var taken bool
	if err := tx.QueryRow(ctx, `SELECT booked FROM slots WHERE id = $1 FOR UPDATE`, req.SlotID).Scan(&taken); err != nil {
		return fmt.Errorf("lock slot %s: %w", req.SlotID, err)
	}
	if taken {
		return consumer.Permanent(fmt.Errorf("slot %s already booked", req.SlotID))
	}
	if _, err := tx.Exec(ctx, `UPDATE slots SET booked = true, patient_id = $2 WHERE id = $1`, req.SlotID, req.PatientID); err != nil {
		return fmt.Errorf("book slot: %w", err)
	}
	return h.c.Audit.Record(ctx, "portal:"+req.Channel, "slot.booked", req.PatientID) // want "audit entry written through the recorder pool, outside the claim transaction"
}
