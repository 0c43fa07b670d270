package greenhouse

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"

	"heldout8/greenhouse/gen/irrigationpb"
)

var errNoTx = errors.New("greenhouse: controller must run behind the Postgres claim")

// Controller is the consumer's handler.
type Controller struct {
	irrigation irrigationpb.IrrigationClient
	rules      []rule
}

// Handle records one reading and waters the zone when a rule says so.
func (c *Controller) Handle(ctx context.Context, msg *consumer.Message) error {
	tx, ok := postgres.Tx(ctx)
	if !ok {
		return errNoTx
	}
	var r reading
	if err := json.Unmarshal(msg.Body, &r); err != nil {
		return consumer.Permanent(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO readings (zone, moisture, temperature) VALUES ($1, $2, $3)`,
		r.Zone, r.Moisture, r.Temperature); err != nil {
		return err
	}
	d, ok := firstDecision(c.rules, r)
	if !ok {
		return nil
	}
	if _, err := tx.Exec(ctx, `INSERT INTO waterings (zone, litres, reason, message_id) VALUES ($1, $2, $3, $4)`,
		r.Zone, d.litres, d.reason, msg.ID); err != nil {
		return err
	}
	_, err := c.irrigation.Schedule(ctx, &irrigationpb.ScheduleRequest{Zone: r.Zone, Litres: d.litres, Reason: d.reason, Request: msg.ID}) // want "irrigation scheduled over gRPC inside the transaction"
	return err
}
