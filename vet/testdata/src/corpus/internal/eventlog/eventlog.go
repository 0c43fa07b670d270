// Package eventlog is a corpus event store (see vet/corpus_test.go): it
// appends and reads event streams through the querier it is built on.
package eventlog

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// Querier is a pool, a connection or a transaction.
type Querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgx.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Log is an append-only event log.
type Log struct{ db Querier }

// New returns a log running its statements on db.
func New(db Querier) *Log { return &Log{db: db} }

// Append adds an event to stream.
func (l *Log) Append(ctx context.Context, stream, kind string) error {
	_, err := l.db.Exec(ctx, `INSERT INTO events (stream, kind) VALUES ($1, $2)`, stream, kind)
	return err
}

// Length returns how many events stream holds.
func (l *Log) Length(ctx context.Context, stream string) (int, error) {
	var n int
	err := l.db.QueryRow(ctx, `SELECT count(*) FROM events WHERE stream = $1`, stream).Scan(&n)
	return n, err
}
