// Package fleet keeps odometer readings and service flags of the trucks.
package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"

	"heldout8/fleet/domain"
)

const serviceIntervalKm = 30_000

type odometerReading struct {
	VehicleID string `json:"vehicle_id"`
	Km        int64  `json:"km"`
	At        string `json:"at"`
}

// Service is the application layer: use cases over the domain's ports.
type Service struct {
	vehicles domain.VehicleRepository
	log      *slog.Logger
}

// NewService returns the application service.
func NewService(vehicles domain.VehicleRepository, log *slog.Logger) *Service {
	return &Service{vehicles: vehicles, log: log}
}

func (s *Service) decode(msg *consumer.Message) (odometerReading, error) {
	var r odometerReading
	if err := json.Unmarshal(msg.Body, &r); err != nil {
		return r, consumer.Permanent(fmt.Errorf("reading %s: %w", msg.ID, err))
	}
	return r, nil
}

func (s *Service) recordReading(ctx context.Context, tx pgx.Tx, r odometerReading) error {
	_, err := tx.Exec(ctx, `INSERT INTO odometer_readings (vehicle_id, km, read_at) VALUES ($1, $2, $3)`,
		r.VehicleID, r.Km, r.At)
	return err
}

// HandleReading applies one odometer reading in the claim's transaction.
func (s *Service) HandleReading(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	r, err := s.decode(msg)
	if err != nil {
		return err
	}
	v, err := s.vehicles.Get(ctx, r.VehicleID)
	if err != nil {
		return fmt.Errorf("vehicle %s: %w", r.VehicleID, err)
	}
	if r.Km <= v.OdometerKm {
		s.log.InfoContext(ctx, "stale reading", "vehicle", v.ID, "km", r.Km)
		return nil
	}
	if err := s.recordReading(ctx, tx, r); err != nil {
		return err
	}
	v.OdometerKm = r.Km
	v.ServiceDue = v.NeedsService(serviceIntervalKm)
	return s.vehicles.Save(ctx, v) // want "vehicles.Save writes through the pool"
}
