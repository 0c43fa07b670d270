// Package gapbugownbegin is a corpus handler package with a bug (see
// vet/corpus_test.go): the stock consumer is claimed; the backfill
// consumer's handler, a function literal, decodes each adjustment and
// applies it in a transaction it begins on the pool itself, behind logging
// only and with no Duplicates: a redelivered adjustment is added twice.
package gapbugownbegin

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

type adjustment struct {
	SKU   string `json:"sku"`
	Delta int    `json:"delta"`
}

func decode(m *consumer.Message) (adjustment, error) {
	var a adjustment
	err := json.Unmarshal(m.Body, &a)
	return a, err
}

func apply(ctx context.Context, tx pgx.Tx, a adjustment) error {
	_, err := tx.Exec(ctx, "UPDATE stock SET qty = qty + $2 WHERE sku = $1", a.SKU, a.Delta)
	return err
}

func adjust(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	a, err := decode(m)
	if err != nil {
		return err
	}
	return apply(ctx, tx, a)
}

// Wire starts the stock consumer and the archive backfill.
func Wire(stock, archive consumer.Source, pool *pgxpool.Pool, st *postgres.Store) error {
	if _, err := consumer.New(stock, postgres.HandlerFunc(adjust), consumer.Config{Name: "stock"}, middleware.Idempotency(st)); err != nil {
		return err
	}
	replay := consumer.HandlerFunc(func(ctx context.Context, m *consumer.Message) error {
		a, err := decode(m)
		if err != nil {
			return err
		}
		tx, err := pool.Begin(ctx)
		if err != nil {
			return err
		}
		defer tx.Rollback(ctx)
		if err := apply(ctx, tx, a); err != nil {
			return err
		}
		return tx.Commit(ctx)
	})
	_, err := consumer.New(archive, replay, consumer.Config{Name: "stock-backfill"}, middleware.Logging()) // want `consumer.New without an idempotency middleware`
	return err
}
