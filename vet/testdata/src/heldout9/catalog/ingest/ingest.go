// Package ingest merges supplier data into the catalog.
package ingest

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
	"golang.org/x/sync/errgroup"

	"heldout9/catalog/supplier"
)

// Merger asks every supplier about a product and keeps the best offer.
type Merger struct {
	feeds []*supplier.Feed
}

// NewMerger returns a merger over feeds.
func NewMerger(feeds []*supplier.Feed) *Merger { return &Merger{feeds: feeds} }

// Handler returns the product-changed handler.
func (m *Merger) Handler() consumer.Handler { return postgres.HandlerFunc(m.merge) }

func (m *Merger) merge(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var ev struct {
		SKU string `json:"sku"`
	}
	if err := json.Unmarshal(msg.Body, &ev); err != nil {
		return consumer.Permanent(err)
	}
	offers := make([]supplier.Product, len(m.feeds))
	g, gctx := errgroup.WithContext(ctx)
	for i, f := range m.feeds {
		g.Go(func() error {
			p, err := f.Lookup(gctx, ev.SKU)
			offers[i] = p
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	best := offers[0]
	for _, o := range offers[1:] {
		if o.Stock > 0 && (best.Stock == 0 || o.Price < best.Price) {
			best = o
		}
	}
	_, err := tx.Exec(ctx, `INSERT INTO offers (sku, price, stock) VALUES ($1, $2, $3)
		ON CONFLICT (sku) DO UPDATE SET price = EXCLUDED.price, stock = EXCLUDED.stock`, ev.SKU, best.Price, best.Stock)
	return err
}

// Retire removes a product from the catalog.
func (m *Merger) Retire(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	_, err := tx.Exec(ctx, `DELETE FROM offers WHERE sku = $1`, msg.Key)
	return err
}
