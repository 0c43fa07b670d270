// Package pgevents implements the ledger's ports on Postgres.
package pgevents

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"heldout8/mint/ledger"
)

// Snapshots keeps compacted wallet states; the compaction job saves them,
// handlers only load them.
type Snapshots struct{ pool *pgxpool.Pool }

// NewSnapshots returns snapshots over pool.
func NewSnapshots(pool *pgxpool.Pool) *Snapshots { return &Snapshots{pool: pool} }

// Load returns the newest snapshot of id (an empty wallet when none).
func (s *Snapshots) Load(ctx context.Context, id string) (ledger.Wallet, error) {
	w := ledger.Wallet{ID: id}
	err := s.pool.QueryRow(ctx, `SELECT seq, points FROM wallet_snapshots WHERE wallet_id = $1`, id).Scan(&w.Seq, &w.Points)
	return w, err
}

// Save replaces id's snapshot.
func (s *Snapshots) Save(ctx context.Context, w ledger.Wallet) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO wallet_snapshots (wallet_id, seq, points) VALUES ($1, $2, $3)
		ON CONFLICT (wallet_id) DO UPDATE SET seq = EXCLUDED.seq, points = EXCLUDED.points`, w.ID, w.Seq, w.Points)
	return err
}

// Stream is a wallet event stream within one transaction.
type Stream struct{ tx pgx.Tx }

// On returns the stream of tx.
func On(tx pgx.Tx) *Stream { return &Stream{tx: tx} }

// After reads id's events after seq; events are small, a wallet has few.
func (s *Stream) After(ctx context.Context, id string, seq int64) ([]ledger.Event, error) {
	var raw []byte
	if err := s.tx.QueryRow(ctx, `SELECT coalesce(json_agg(e ORDER BY seq), '[]') FROM wallet_events e WHERE wallet_id = $1 AND seq > $2`,
		id, seq).Scan(&raw); err != nil {
		return nil, err
	}
	var evts []ledger.Event
	return evts, json.Unmarshal(raw, &evts)
}

// Append writes events in one round trip.
func (s *Stream) Append(ctx context.Context, id string, events ...ledger.Event) error {
	b := &pgx.Batch{}
	for _, e := range events {
		b.Queue(`INSERT INTO wallet_events (wallet_id, seq, kind, points, meta) VALUES ($1, $2, $3, $4, $5)`,
			id, e.Seq, e.Kind, e.Points, e.Meta)
	}
	return s.tx.SendBatch(ctx, b).Close()
}
