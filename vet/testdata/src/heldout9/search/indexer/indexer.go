// Package indexer keeps the search documents table current.
package indexer

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/outbox"
	"github.com/oncely/oncely/store/postgres"
	"github.com/redis/go-redis/v9"

	"heldout9/search/synonyms"
)

// Indexer indexes product documents.
type Indexer struct {
	syn *synonyms.Cache
	rdb *redis.Client
}

type doc struct {
	ID    string `json:"id"`
	Title string `json:"title"`
}

func (ix *Indexer) index(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var d doc
	if err := json.Unmarshal(msg.Body, &d); err != nil {
		return consumer.Permanent(err)
	}
	if err := ix.syn.Lock(ctx, d.ID, 30*time.Second); err != nil {
		return err // another replica is indexing it: retried with backoff
	}
	defer ix.rdb.Del(context.WithoutCancel(ctx), "lock:doc:"+d.ID)
	terms := strings.Fields(strings.ToLower(d.Title))
	for _, t := range terms {
		terms = append(terms, ix.syn.For(ctx, t)...)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO search_docs (id, terms) VALUES ($1, $2)
		ON CONFLICT (id) DO UPDATE SET terms = EXCLUDED.terms`, d.ID, terms); err != nil {
		return err
	}
	return outbox.Send(ctx, tx, "search.indexed", &consumer.Message{Key: d.ID, Body: msg.Body})
}

func (ix *Indexer) remove(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	_, err := tx.Exec(ctx, `DELETE FROM search_docs WHERE id = $1`, msg.Key)
	return err
}

// Start wires the indexing consumers.
func Start(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker, rdb *redis.Client) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	ix := &Indexer{syn: &synonyms.Cache{RDB: rdb}, rdb: rdb}
	up, err := broker.Source(ctx, "products.upserted", "search-index")
	if err != nil {
		return err
	}
	del, err := broker.Source(ctx, "products.deleted", "search-remove")
	if err != nil {
		return err
	}
	c1, err := consumer.New(up, postgres.HandlerFunc(ix.index), consumer.Config{Name: "search-index"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	c2, err := consumer.New(del, postgres.HandlerFunc(ix.remove), consumer.Config{Name: "search-remove"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	go c1.Run(ctx)
	go c2.Run(ctx)
	return nil
}
