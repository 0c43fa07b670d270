// Package pricing applies repricing decisions and tells the storefronts.
package pricing

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/twmb/franz-go/pkg/kgo"

	"heldout8/pricing/catalog"
	"heldout8/pricing/pgprices"
)

// Repricer is the use case "apply a repricing decision".
type Repricer struct {
	kafka *kgo.Client
	topic string
}

// NewRepricer returns a repricer announcing on topic.
func NewRepricer(kafka *kgo.Client, topic string) *Repricer {
	return &Repricer{kafka: kafka, topic: topic}
}

// prices returns the repository for one unit of work.
func (r *Repricer) prices(tx pgx.Tx) catalog.PriceRepository {
	return &publishingPrices{next: pgprices.New(tx), kafka: r.kafka, topic: r.topic}
}

// Apply is the handler: one decision, in the claim's transaction.
func (r *Repricer) Apply(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var p catalog.Price
	if err := json.Unmarshal(msg.Body, &p); err != nil {
		return consumer.Permanent(err)
	}
	if err := p.Validate(); errors.Is(err, catalog.ErrBelowFloor) {
		return consumer.Permanent(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO price_history (sku, market, cents, decided_by) VALUES ($1, $2, $3, $4)`,
		p.SKU, p.Market, p.Cents, msg.Headers["decided-by"]); err != nil {
		return err
	}
	return r.prices(tx).Save(ctx, p)
}
