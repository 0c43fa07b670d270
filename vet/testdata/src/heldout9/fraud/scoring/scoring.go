// Package scoring scores card authorisations.
package scoring

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
)

// Velocity counts uses of a card.
type Velocity interface {
	Bump(ctx context.Context, card string, now time.Time) (int64, error)
}

// Scorer flags suspicious authorisations.
type Scorer struct {
	Velocity Velocity
	Limit    int64
	Now      func() time.Time
}

type auth struct {
	Card   string `json:"card"`
	Amount int64  `json:"amount"`
}

// Score records the authorisation's risk.
func (s *Scorer) Score(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var a auth
	if err := json.Unmarshal(msg.Body, &a); err != nil {
		return consumer.Permanent(err)
	}
	n, err := s.Velocity.Bump(ctx, a.Card, s.Now()) // want "."
	if err != nil {
		return err
	}
	risk := "low"
	if n > s.Limit {
		risk = "high"
	}
	_, err = tx.Exec(ctx, `INSERT INTO auth_scores (auth_id, card, risk) VALUES ($1, $2, $3)`, msg.ID, a.Card, risk)
	return err
}

// Chargeback records a chargeback against the card.
func (s *Scorer) Chargeback(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	_, err := tx.Exec(ctx, `UPDATE cards SET chargebacks = chargebacks + 1 WHERE id = $1`, msg.Key)
	return err
}
