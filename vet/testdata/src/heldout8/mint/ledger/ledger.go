// Package ledger is the points mint's domain: wallets folded from events.
package ledger

import (
	"context"
	"encoding/json"
	"errors"
)

// ErrOverdrawn is returned when a redemption exceeds the wallet.
var ErrOverdrawn = errors.New("wallet overdrawn")

// Event is one fact of a wallet's stream.
type Event struct {
	Seq    int64           `json:"seq"`
	Kind   string          `json:"kind"`
	Points int64           `json:"points"`
	Meta   json.RawMessage `json:"meta,omitempty"`
}

// Wallet is the fold of a wallet's events.
type Wallet struct {
	ID     string
	Seq    int64
	Points int64
}

// Apply folds e into w.
func (w *Wallet) Apply(e Event) {
	switch e.Kind {
	case "minted":
		w.Points += e.Points
	case "redeemed":
		w.Points -= e.Points
	}
	w.Seq = e.Seq
}

// Snapshots reads and writes compacted wallet states.
type Snapshots interface {
	Load(ctx context.Context, id string) (Wallet, error)
	Save(ctx context.Context, w Wallet) error
}

// Stream appends to and reads a wallet's events after a sequence number.
type Stream interface {
	After(ctx context.Context, id string, seq int64) ([]Event, error)
	Append(ctx context.Context, id string, events ...Event) error
}
