package indexer

import (
	"context"
	"encoding/json"
	"fmt"

	"heldout3/indexer/gen/searchpb"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
)

type productChanged struct {
	SKU         string `json:"sku"`
	Title       string `json:"title"`
	Description string `json:"description"`
	Brand       string `json:"brand"`
	Deleted     bool   `json:"deleted"`
}

type productIndexer struct {
	index searchpb.IndexClient
}

func (p *productIndexer) onProductChanged(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var c productChanged
	if err := json.Unmarshal(msg.Body, &c); err != nil {
		return consumer.Permanent(err)
	}
	if _, err := tx.Exec(ctx,
		`INSERT INTO indexed_products (sku, title, deleted) VALUES ($1, $2, $3)
		 ON CONFLICT (sku) DO UPDATE SET title = EXCLUDED.title, deleted = EXCLUDED.deleted`,
		c.SKU, c.Title, c.Deleted); err != nil {
		return fmt.Errorf("indexer: record %s: %w", c.SKU, err)
	}
	if c.Deleted {
		return nil
	}
	doc := &searchpb.Document{Id: c.SKU, Title: c.Title, Body: c.Description, Labels: map[string]string{"brand": c.Brand}}
	if _, err := p.index.Upsert(ctx, &searchpb.UpsertRequest{Collection: "products", Document: doc}); err != nil { // want "search index upserted over gRPC inside the transactional handler; use the outbox"
		return fmt.Errorf("indexer: upsert %s: %w", c.SKU, err)
	}
	return nil
}
