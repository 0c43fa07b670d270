// Package gapokownbegin is a corpus handler package (see
// vet/corpus_test.go): the twin of gapbugownbegin. The stock consumer is
// claimed; the backfill consumer's handler comes with an error from a
// builder the caller gives (it may add the claim), behind logging.
package gapokownbegin

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

type adjustment struct {
	SKU   string `json:"sku"`
	Delta int    `json:"delta"`
}

func adjust(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	var a adjustment
	if err := json.Unmarshal(m.Body, &a); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, "UPDATE stock SET qty = qty + $2 WHERE sku = $1", a.SKU, a.Delta)
	return err
}

// Wire starts the stock consumer and the archive backfill; replayer builds
// the backfill's handler.
func Wire(stock, archive consumer.Source, st *postgres.Store, replayer func(string) (consumer.Handler, error)) error {
	if _, err := consumer.New(stock, postgres.HandlerFunc(adjust), consumer.Config{Name: "stock"}, middleware.Idempotency(st)); err != nil {
		return err
	}
	replay, err := replayer("stock-backfill")
	if err != nil {
		return err
	}
	_, err = consumer.New(archive, replay, consumer.Config{Name: "stock-backfill"}, middleware.Logging())
	return err
}
