// Package store persists the search index's document metadata.
package store

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// Querier is satisfied by *pgxpool.Pool and pgx.Tx.
type Querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgx.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// Documents reads and writes indexed documents.
type Documents struct {
	db Querier
}

// NewDocuments returns Documents over db.
func NewDocuments(db Querier) *Documents { return &Documents{db: db} }

// In returns Documents that run in tx.
func (d *Documents) In(tx pgx.Tx) *Documents { return &Documents{db: tx} }

// Upsert stores a document's searchable text.
func (d *Documents) Upsert(ctx context.Context, id, title, text string) error {
	_, err := d.db.Exec(ctx,
		`INSERT INTO search_documents (id, title, body) VALUES ($1, $2, $3)
		 ON CONFLICT (id) DO UPDATE SET title = EXCLUDED.title, body = EXCLUDED.body`, id, title, text)
	return err
}

// RefreshFacets recomputes the facet counts touched by a document.
func (d *Documents) RefreshFacets(ctx context.Context, id string) error {
	_, err := d.db.Exec(ctx, `SELECT refresh_facets_for($1)`, id)
	return err
}
