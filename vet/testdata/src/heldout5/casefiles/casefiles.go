// Package casefiles keeps legal case files and their document index.
package casefiles

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"

	"heldout5/casefiles/typed"
)

// DocumentAdded is a document attached to a case.
type DocumentAdded struct {
	CaseID string   `json:"case_id"`
	DocID  string   `json:"doc_id"`
	Title  string   `json:"title"`
	Tags   []string `json:"tags"`
}

// Index maintains the case document index.
type Index struct{}

// Add indexes one document.
func (Index) Add(ctx context.Context, tx pgx.Tx, d DocumentAdded) error {
	if _, err := tx.Exec(ctx, `INSERT INTO case_documents (case_id, doc_id, title) VALUES ($1, $2, $3)`, d.CaseID, d.DocID, d.Title); err != nil {
		return err
	}
	for _, t := range d.Tags {
		if _, err := tx.Exec(ctx, `INSERT INTO document_tags (doc_id, tag) VALUES ($1, $2) ON CONFLICT DO NOTHING`, d.DocID, t); err != nil {
			return err
		}
	}
	_, err := tx.Exec(ctx, `UPDATE cases SET document_count = document_count + 1 WHERE id = $1`, d.CaseID)
	return err
}

const schema = `CREATE TABLE IF NOT EXISTS document_tags (doc_id text, tag text, PRIMARY KEY (doc_id, tag))`

// Run migrates the index table and consumes document events.
func Run(ctx context.Context, pool *pgxpool.Pool, src consumer.Source) error {
	if _, err := pool.Exec(ctx, schema); err != nil {
		return err
	}
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	c, err := consumer.New(src, typed.Func(Index{}.Add), consumer.Config{Name: "casefiles"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
