// Package berths is the harbour's domain: berths and the vessels assigned
// to them.
package berths

import (
	"context"
	"errors"
	"time"
)

// ErrOccupied is returned when a berth is taken for the requested window.
var ErrOccupied = errors.New("berth occupied")

// Berth is a quay position.
type Berth struct {
	ID       string
	MaxDraft float64
	Occupant string
	Until    time.Time
}

// Free reports whether the berth is free at t.
func (b Berth) Free(t time.Time) bool { return b.Occupant == "" || !t.Before(b.Until) }

// Repository is the port berths are kept through.
type Repository interface {
	Find(ctx context.Context, id string) (Berth, error)
	Assign(ctx context.Context, id, vessel string, until time.Time) error
}
