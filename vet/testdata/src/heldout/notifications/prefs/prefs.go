// Package prefs holds users' notification preferences and delivery records.
package prefs

import (
	"context"
	"time"
)

// Channel is where a notification goes.
type Channel string

// The channels users can choose.
const (
	Email Channel = "email"
	Push  Channel = "push"
	SMS   Channel = "sms"
)

// Deps are the storage operations the notification service needs; the
// service's main wires them.
type Deps struct {
	// Channels returns the channels userID opted into.
	Channels func(ctx context.Context, userID string) ([]Channel, error)
	// RecordDelivery notes that a notification was queued for a channel.
	RecordDelivery func(ctx context.Context, userID string, ch Channel, at time.Time) error
}
