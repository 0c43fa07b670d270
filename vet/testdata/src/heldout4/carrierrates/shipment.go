// Package carrierrates picks the cheapest carrier service that meets a
// shipment's promised delivery date and requests the label.
package carrierrates

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/outbox"
)

type shipmentPacked struct {
	ShipmentID string `json:"shipment_id"`
	FromZip    string `json:"from_zip"`
	ToZip      string `json:"to_zip"`
	Grams      int    `json:"grams"`
	MaxDays    int    `json:"max_days"`
}

type chooser struct {
	rates *rateCard
}

func (c *chooser) choose(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var s shipmentPacked
	if err := json.Unmarshal(msg.Body, &s); err != nil {
		return consumer.Permanent(fmt.Errorf("decode shipment: %w", err))
	}
	qs, err := c.rates.quotes(ctx, s.FromZip, s.ToZip, s.Grams)
	if err != nil {
		return err
	}
	var best *quote
	for i := range qs {
		if qs[i].TransitDays <= s.MaxDays && (best == nil || qs[i].PriceCents < best.PriceCents) {
			best = &qs[i]
		}
	}
	if best == nil {
		return consumer.Permanent(fmt.Errorf("shipment %s: no service within %d days", s.ShipmentID, s.MaxDays))
	}
	if _, err := tx.Exec(ctx, `UPDATE shipments SET service = $2, quoted_cents = $3 WHERE id = $1`, s.ShipmentID, best.Service, best.PriceCents); err != nil {
		return fmt.Errorf("store choice: %w", err)
	}
	body, err := json.Marshal(map[string]any{"shipment_id": s.ShipmentID, "service": best.Service})
	if err != nil {
		return err
	}
	return outbox.Send(ctx, tx, "carrier.label-requested", &consumer.Message{ID: msg.ID + ":label", Key: s.ShipmentID, Body: body})
}
