// Package appointments confirms held appointments once the patient paid the
// deposit, and serves the front desk's cancel endpoint.
package appointments

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"

	"heldout4/appointments/apptdb"
)

type depositPaid struct {
	AppointmentID string `json:"appointment_id"`
	Channel       string `json:"reminder_channel"`
}

// Confirmer confirms appointments.
type Confirmer struct {
	Now func() time.Time
}

// Handle confirms one appointment and schedules its reminder.
func (c *Confirmer) Handle(ctx context.Context, msg *consumer.Message) error {
	var ev depositPaid
	if err := json.Unmarshal(msg.Body, &ev); err != nil {
		return consumer.Permanent(fmt.Errorf("decode deposit: %w", err))
	}
	tx, ok := postgres.Tx(ctx)
	if !ok {
		return fmt.Errorf("appointments: handler needs the claim transaction")
	}
	q := apptdb.New(tx)
	if err := q.ConfirmAppointment(ctx, ev.AppointmentID, c.Now()); err != nil {
		return fmt.Errorf("confirm %s: %w", ev.AppointmentID, err)
	}
	starts, err := q.GetStart(ctx, ev.AppointmentID)
	if err != nil {
		return err
	}
	return q.InsertReminder(ctx, ev.AppointmentID, starts.Add(-24*time.Hour), ev.Channel)
}
