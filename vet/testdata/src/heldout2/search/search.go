// Package search keeps the product search index in step with the catalog.
package search

import (
	"context"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"

	"heldout2/search/index"
)

type indexer struct {
	idx *index.Client
}

func (i *indexer) upsert(ctx context.Context, msg *consumer.Message) error {
	return i.idx.Upsert(ctx, index.Doc{ID: msg.Key, Body: msg.Body})
}

func (i *indexer) remove(ctx context.Context, msg *consumer.Message) error {
	return i.idx.Delete(ctx, msg.Key)
}

type mux map[string]consumer.HandlerFunc

func (m mux) Handle(ctx context.Context, msg *consumer.Message) error {
	if h, ok := m[msg.Headers["op"]]; ok {
		return h(ctx, msg)
	}
	return nil
}

// Run wires the indexer.
func Run(ctx context.Context, broker adapters.Broker, url string) error {
	i := &indexer{idx: index.New(url)}
	m := mux{"upsert": i.upsert, "delete": i.remove}
	h := consumer.Chain(m, middleware.Logging())
	src, err := broker.Source(ctx, "catalog.changes", "search-indexer")
	if err != nil {
		return err
	}
	c, err := consumer.New(src, h, consumer.Config{Name: "search-indexer", Concurrency: 8}) // want "idempotency"
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
