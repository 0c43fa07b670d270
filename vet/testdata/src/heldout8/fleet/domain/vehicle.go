// Package domain holds the fleet's vehicles and the ports the application
// needs; it imports no infrastructure.
package domain

import (
	"context"
	"errors"
)

// ErrNotFound is returned by a repository that has no such vehicle.
var ErrNotFound = errors.New("vehicle not found")

// Vehicle is one truck of the fleet.
type Vehicle struct {
	ID         string
	Plate      string
	OdometerKm int64
	ServiceDue bool
}

// NeedsService reports whether the vehicle passed its service interval.
func (v Vehicle) NeedsService(intervalKm int64) bool {
	return intervalKm > 0 && v.OdometerKm%intervalKm < 500
}

// VehicleRepository is the port the application stores vehicles through.
type VehicleRepository interface {
	Get(ctx context.Context, id string) (Vehicle, error)
	Save(ctx context.Context, v Vehicle) error
}
