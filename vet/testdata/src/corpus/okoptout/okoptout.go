// Package okoptout is a corpus handler package (see vet/corpus_test.go).
package okoptout

import (
	"context"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
)

type handler struct{ pool *pgxpool.Pool }

// Handle upserts by message ID: duplicates are harmless, and the consumer says so.
func (h *handler) Handle(ctx context.Context, m *consumer.Message) error {
	_, err := h.pool.Exec(ctx, "INSERT INTO views (id) VALUES ($1) ON CONFLICT DO NOTHING", m.ID)
	return err
}

func Wire(src consumer.Source, pool *pgxpool.Pool) (*consumer.Consumer, error) {
	cfg := consumer.Config{Name: "views", Duplicates: consumer.AllowDuplicates("upsert by message ID")}
	return consumer.New(src, &handler{pool: pool}, cfg)
}
