package fleet

import (
	"context"
	"encoding/json"
	"errors"

	"heldout3/fleet/internal/svc"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type serviceDue struct {
	VehicleID string `json:"vehicle_id"`
	Kind      string `json:"kind"`
}

// maintenanceHandler opens a work order when a vehicle is due for service.
type maintenanceHandler struct {
	svc.Deps
}

func (h *maintenanceHandler) Handle(ctx context.Context, msg *consumer.Message) error {
	tx, ok := postgres.Tx(ctx)
	if !ok {
		return errors.New("fleet: maintenance handler runs without a claim")
	}
	var d serviceDue
	if err := json.Unmarshal(msg.Body, &d); err != nil {
		return consumer.Permanent(err)
	}
	_, err := tx.Exec(ctx, `INSERT INTO work_orders (vehicle_id, kind, opened_at) VALUES ($1, $2, $3)`, d.VehicleID, d.Kind, h.Now())
	return err
}
