// Package booking is the concierge domain: reservations and the guest
// notifications they cause.
package booking

import (
	"context"
	"time"
)

// Reservation is a table, spa or car reservation made for a guest.
type Reservation struct {
	ID        string    `json:"id"`
	GuestName string    `json:"guest_name"`
	Email     string    `json:"email"`
	Kind      string    `json:"kind"`
	At        time.Time `json:"at"`
}

// Notifier tells guests about their reservations.
type Notifier interface {
	Confirmed(ctx context.Context, r Reservation) error
}
