// Package queries is audit's generated-style query layer.
package queries

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// DBTX is the pool or a transaction.
type DBTX interface {
	Exec(ctx context.Context, sql string, args ...any) (pgx.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Queries runs audit's statements.
type Queries struct{ db DBTX }

// New returns queries over db.
func New(db DBTX) *Queries { return &Queries{db: db} }

// WithTx returns queries over tx.
func (q *Queries) WithTx(tx pgx.Tx) *Queries { return &Queries{db: tx} }

// AppendEvent inserts one audit event.
func (q *Queries) AppendEvent(ctx context.Context, id, actor, action string, body []byte) error {
	_, err := q.db.Exec(ctx, `INSERT INTO audit_events (id, actor, action, body) VALUES ($1, $2, $3, $4)`, id, actor, action, body)
	return err
}

// LastSeq reads the last sequence number of actor.
func (q *Queries) LastSeq(ctx context.Context, actor string) (int64, error) {
	var n int64
	err := q.db.QueryRow(ctx, `SELECT coalesce(max(seq), 0) FROM audit_events WHERE actor = $1`, actor).Scan(&n)
	return n, err
}

// BumpSeq advances actor's sequence.
func (q *Queries) BumpSeq(ctx context.Context, actor string) error {
	_, err := q.db.Exec(ctx, `UPDATE audit_actors SET seq = seq + 1 WHERE actor = $1`, actor)
	return err
}
