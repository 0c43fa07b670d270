// Package search keeps the product search index up to date.
package search

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"

	"heldout/search/internal/store"
)

// Indexer updates search documents from product events.
type Indexer struct {
	docs *store.Documents
	log  *slog.Logger
}

type productUpdated struct {
	ProductID   string `json:"product_id"`
	Title       string `json:"title"`
	Description string `json:"description"`
}

func (ix *Indexer) index(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var ev productUpdated
	if err := json.Unmarshal(msg.Body, &ev); err != nil {
		return consumer.Permanent(err)
	}
	docs := ix.docs.In(tx)
	if err := docs.Upsert(ctx, ev.ProductID, ev.Title, ev.Description); err != nil {
		return err
	}
	// Facet refresh is slow and best effort; do not hold the message for it.
	go func() { // want "tx-bound documents used from a goroutine"
		if err := docs.RefreshFacets(context.WithoutCancel(ctx), ev.ProductID); err != nil {
			ix.log.Warn("facet refresh", "product", ev.ProductID, "err", err)
		}
	}()
	return nil
}

// Run consumes products.updated.
func Run(ctx context.Context, broker adapters.Broker, pool *pgxpool.Pool, log *slog.Logger) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	ix := &Indexer{docs: store.NewDocuments(pool), log: log}
	src, err := broker.Source(ctx, "products.updated", "search-indexer")
	if err != nil {
		return err
	}
	c, err := consumer.New(src, postgres.HandlerFunc(ix.index), consumer.Config{Name: "search-indexer"},
		middleware.Logging(), middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
