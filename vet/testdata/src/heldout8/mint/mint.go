// Package mint mints and redeems loyalty points, event-sourced.
package mint

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"

	"heldout8/mint/ledger"
	"heldout8/mint/pgevents"
)

type command struct {
	Wallet string `json:"wallet"`
	Kind   string `json:"kind"` // minted | redeemed
	Points int64  `json:"points"`
}

// Mint is the command handler.
type Mint struct {
	snapshots ledger.Snapshots
	streamOf  func(tx pgx.Tx) ledger.Stream
}

// NewMint returns a mint reading snapshots from snaps.
func NewMint(snaps ledger.Snapshots) *Mint {
	return &Mint{snapshots: snaps, streamOf: func(tx pgx.Tx) ledger.Stream { return pgevents.On(tx) }}
}

func (m *Mint) rehydrate(ctx context.Context, stream ledger.Stream, id string) (ledger.Wallet, error) {
	w, err := m.snapshots.Load(ctx, id)
	if err != nil {
		return w, err
	}
	evts, err := stream.After(ctx, id, w.Seq)
	if err != nil {
		return w, err
	}
	for _, e := range evts {
		w.Apply(e)
	}
	return w, nil
}

// Handle applies one mint or redeem command.
func (m *Mint) Handle(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var c command
	if err := json.Unmarshal(msg.Body, &c); err != nil {
		return consumer.Permanent(err)
	}
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext($1))`, c.Wallet); err != nil {
		return err
	}
	stream := m.streamOf(tx)
	w, err := m.rehydrate(ctx, stream, c.Wallet)
	if err != nil {
		return err
	}
	if c.Kind == "redeemed" && c.Points > w.Points {
		return consumer.Permanent(ledger.ErrOverdrawn)
	}
	meta, _ := json.Marshal(map[string]string{"message_id": msg.ID})
	return stream.Append(ctx, c.Wallet, ledger.Event{Seq: w.Seq + 1, Kind: c.Kind, Points: c.Points, Meta: meta})
}
