package fraud

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"golang.org/x/sync/errgroup"
)

type paymentAttempted struct {
	PaymentID string `json:"payment_id"`
	CardHash  string `json:"card_hash"`
	IP        string `json:"ip"`
}

// assess asks every provider at once, waits for all answers, and stores the
// decision in the claim's transaction.
func (s *scorer) assess(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var p paymentAttempted
	if err := json.Unmarshal(msg.Body, &p); err != nil {
		return consumer.Permanent(err)
	}
	signals := make([]signal, len(s.providers))
	g, gctx := errgroup.WithContext(ctx)
	for i, pr := range s.providers {
		g.Go(func() error {
			sig, err := s.fetch(gctx, pr, p.CardHash, p.IP)
			signals[i] = sig
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	worst := 0
	for _, sig := range signals {
		worst = max(worst, sig.Score)
		if _, err := tx.Exec(ctx, `INSERT INTO risk_signals (payment_id, provider, score) VALUES ($1, $2, $3)`,
			p.PaymentID, sig.Provider, sig.Score); err != nil {
			return fmt.Errorf("fraud: signal %s: %w", sig.Provider, err)
		}
	}
	decision := "approve"
	if worst >= 80 {
		decision = "decline"
	} else if worst >= 50 {
		decision = "review"
	}
	_, err := tx.Exec(ctx, `INSERT INTO risk_decisions (payment_id, decision, score) VALUES ($1, $2, $3)`, p.PaymentID, decision, worst)
	return err
}
