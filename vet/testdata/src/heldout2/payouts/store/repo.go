// Package store is the payouts service's generic persistence layer.
package store

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// DB runs statements; *pgxpool.Pool and pgx.Tx both satisfy it.
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgx.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Repo stores documents of one kind as JSON rows.
type Repo[T any] struct {
	db    DB
	table string
}

// NewRepo returns a Repo writing to table through db.
func NewRepo[T any](db DB, table string) *Repo[T] {
	return &Repo[T]{db: db, table: table}
}

// Put upserts v under id.
func (r *Repo[T]) Put(ctx context.Context, id string, v T) error {
	doc, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s: %w", r.table, err)
	}
	_, err = r.db.Exec(ctx, `INSERT INTO `+r.table+` (id, doc) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET doc = $2`, id, doc)
	return err
}

// Get loads the document under id.
func (r *Repo[T]) Get(ctx context.Context, id string) (T, error) {
	var v T
	var doc []byte
	if err := r.db.QueryRow(ctx, `SELECT doc FROM `+r.table+` WHERE id = $1`, id).Scan(&doc); err != nil {
		return v, err
	}
	return v, json.Unmarshal(doc, &v)
}
