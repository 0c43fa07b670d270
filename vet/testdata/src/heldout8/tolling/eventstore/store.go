// Package eventstore appends and loads event streams in Postgres.
package eventstore

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Event is one recorded fact of a stream.
type Event struct {
	Type string
	Data json.RawMessage
}

// Querier is a pool, a connection or a transaction.
type Querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgx.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Store is an append-only event log.
type Store struct {
	db Querier
}

// New returns a store running its statements on db.
func New(db Querier) *Store { return &Store{db: db} }

// Append adds events to streamID after version expected; the unique
// (stream, version) index turns a concurrent append into an error.
func (s *Store) Append(ctx context.Context, streamID string, expected int, events ...Event) error {
	for i, e := range events {
		if _, err := s.db.Exec(ctx, `INSERT INTO events (stream_id, version, type, data) VALUES ($1, $2, $3, $4)`,
			streamID, expected+i+1, e.Type, e.Data); err != nil {
			return fmt.Errorf("append %s@%d: %w", streamID, expected+i+1, err)
		}
	}
	return nil
}

// Version returns the stream's current version (0 when empty).
func (s *Store) Version(ctx context.Context, streamID string) (int, error) {
	var v int
	err := s.db.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM events WHERE stream_id = $1`, streamID).Scan(&v)
	return v, err
}
