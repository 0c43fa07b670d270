// Package gapbugreturnedeffect is a corpus handler package with a bug
// (see vet/corpus_test.go): a helper returns the repository port for one
// unit of work as a decorator over the transaction that also produces
// every saved price to Kafka; the handler saves through it, so the record
// is produced before the claim commits, and again on every redelivery.
package gapbugreturnedeffect

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Prices is the port.
type Prices interface {
	Save(ctx context.Context, sku string, cents int) error
}

type txPrices struct{ tx pgx.Tx }

func (p txPrices) Save(ctx context.Context, sku string, cents int) error {
	_, err := p.tx.Exec(ctx, "UPDATE prices SET cents = $2 WHERE sku = $1", sku, cents)
	return err
}

type announcing struct {
	next  Prices
	kafka *kgo.Client
}

func (a *announcing) Save(ctx context.Context, sku string, cents int) error {
	if err := a.next.Save(ctx, sku, cents); err != nil {
		return err
	}
	for _, res := range a.kafka.ProduceSync(ctx, &kgo.Record{Topic: "prices", Value: []byte(sku)}) {
		if res.Err != nil {
			return res.Err
		}
	}
	return nil
}

type handler struct{ kafka *kgo.Client }

func (h *handler) prices(tx pgx.Tx) Prices { return &announcing{next: txPrices{tx}, kafka: h.kafka} }

func (h *handler) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	return h.prices(tx).Save(ctx, m.Key, len(m.Body)) // want `ProduceSync is an effect outside the database`
}

// New builds the handler.
func New(kafka *kgo.Client) consumer.Handler {
	return postgres.HandlerFunc((&handler{kafka: kafka}).handle)
}
