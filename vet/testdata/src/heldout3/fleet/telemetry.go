package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"heldout3/fleet/internal/svc"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type positionReport struct {
	VehicleID string  `json:"vehicle_id"`
	Lat       float64 `json:"lat"`
	Lon       float64 `json:"lon"`
	SpeedKmh  float64 `json:"speed_kmh"`
}

// telemetryHandler stores position reports and keeps each vehicle's
// last-seen time for the dispatch board.
type telemetryHandler struct {
	svc.Deps
}

func (h *telemetryHandler) Handle(ctx context.Context, msg *consumer.Message) error {
	tx, ok := postgres.Tx(ctx)
	if !ok {
		return errors.New("fleet: telemetry handler runs without a claim")
	}
	var r positionReport
	if err := json.Unmarshal(msg.Body, &r); err != nil {
		return consumer.Permanent(err)
	}
	if _, err := tx.Exec(ctx,
		`INSERT INTO positions (vehicle_id, lat, lon, speed_kmh, reported_at) VALUES ($1, $2, $3, $4, $5)`,
		r.VehicleID, r.Lat, r.Lon, r.SpeedKmh, h.Now()); err != nil {
		return fmt.Errorf("fleet: insert position: %w", err)
	}
	if _, err := h.DB.Exec(ctx, `UPDATE vehicles SET last_seen_at = $2 WHERE id = $1`, r.VehicleID, h.Now()); err != nil { // want "last-seen update through the embedded Deps pool, outside the claim's transaction"
		return fmt.Errorf("fleet: touch vehicle: %w", err)
	}
	return nil
}
