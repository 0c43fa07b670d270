// Package parcelnotify marks parcels delivered and tells the recipient.
package parcelnotify

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"

	"heldout4/parcelnotify/mailer"
)

type scanDelivered struct {
	Tracking  string `json:"tracking"`
	Place     string `json:"place"`
	CourierID string `json:"courier_id"`
}

type handler struct {
	mail *mailer.Mailer
}

func (h *handler) onDelivered(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var scan scanDelivered
	if err := json.Unmarshal(msg.Body, &scan); err != nil {
		return consumer.Permanent(fmt.Errorf("decode scan: %w", err))
	}
	var email, name string
	if err := tx.QueryRow(ctx,
		`UPDATE parcels SET status = 'delivered', delivered_at = now() WHERE tracking = $1 RETURNING recipient_email, recipient_name`,
		scan.Tracking).Scan(&email, &name); err != nil {
		return fmt.Errorf("mark delivered %s: %w", scan.Tracking, err)
	}
	if _, err := tx.Exec(ctx, `UPDATE couriers SET drops_today = drops_today + 1 WHERE id = $1`, scan.CourierID); err != nil {
		return fmt.Errorf("count drop: %w", err)
	}
	return h.mail.Delivered(email, name, scan.Tracking, scan.Place) // want "delivery e-mail sent inside the claim transaction instead of through the outbox"
}
