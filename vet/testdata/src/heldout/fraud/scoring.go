// Package fraud scores payments and blocks the risky ones.
package fraud

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
)

// Scorer scores payments.
type Scorer struct {
	pool      *pgxpool.Pool
	threshold float64
}

type paymentAuthorized struct {
	PaymentID string  `json:"payment_id"`
	CardBIN   string  `json:"card_bin"`
	Country   string  `json:"country"`
	Amount    float64 `json:"amount"`
}

func (s *Scorer) score(ctx context.Context, msg *consumer.Message) error {
	var p paymentAuthorized
	if err := json.Unmarshal(msg.Body, &p); err != nil {
		return consumer.Permanent(err)
	}
	risk := 0.0
	if p.Amount > 1000 {
		risk += 0.4
	}
	if p.Country != "" && p.CardBIN != "" && p.CardBIN[0] == '9' {
		risk += 0.5
	}
	if _, err := s.pool.Exec(ctx,
		`INSERT INTO fraud_scores (payment_id, risk) VALUES ($1, $2)`, p.PaymentID, risk); err != nil {
		return fmt.Errorf("score %s: %w", p.PaymentID, err)
	}
	if risk >= s.threshold {
		_, err := s.pool.Exec(ctx, `UPDATE payments SET blocked = true WHERE id = $1`, p.PaymentID)
		return err
	}
	return nil
}

// Run consumes payments.authorized.
func Run(ctx context.Context, broker adapters.Broker, pool *pgxpool.Pool) error {
	src, err := broker.Source(ctx, "payments.authorized", "fraud")
	if err != nil {
		return err
	}
	s := &Scorer{pool: pool, threshold: 0.8}
	c, err := consumer.New(src,
		consumer.Deduplicating(consumer.HandlerFunc(s.score)), // want "Deduplicating without a claim"
		consumer.Config{Name: "fraud"},
		middleware.Logging(),
	)
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
