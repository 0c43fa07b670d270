// Package logrepo decorates a VehicleRepository with structured logs.
package logrepo

import (
	"context"
	"log/slog"
	"time"

	"heldout8/fleet/domain"
)

type logging struct {
	next domain.VehicleRepository
	log  *slog.Logger
}

// Wrap returns next with every call logged.
func Wrap(next domain.VehicleRepository, log *slog.Logger) domain.VehicleRepository {
	return &logging{next: next, log: log}
}

func (l *logging) Get(ctx context.Context, id string) (domain.Vehicle, error) {
	start := time.Now()
	v, err := l.next.Get(ctx, id)
	l.log.DebugContext(ctx, "vehicle.get", "id", id, "took", time.Since(start), "err", err)
	return v, err
}

func (l *logging) Save(ctx context.Context, v domain.Vehicle) error {
	start := time.Now()
	err := l.next.Save(ctx, v)
	l.log.DebugContext(ctx, "vehicle.save", "id", v.ID, "took", time.Since(start), "err", err)
	return err
}
