// Package fraudscore scores card authorisations and holds suspicious ones
// for review.
package fraudscore

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/outbox"
)

type authorisation struct {
	AuthID      string `json:"auth_id"`
	CardID      string `json:"card_id"`
	AmountCents int64  `json:"amount_cents"`
	Country     string `json:"country"`
	MCC         string `json:"mcc"`
}

type scorer struct {
	rules *rules
}

func (s *scorer) score(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var a authorisation
	if err := json.Unmarshal(msg.Body, &a); err != nil {
		return consumer.Permanent(fmt.Errorf("decode authorisation: %w", err))
	}
	rs, err := s.rules.get(ctx)
	if err != nil {
		return err
	}
	var spentToday int64
	if err := tx.QueryRow(ctx,
		`SELECT coalesce(sum(amount_cents), 0) FROM authorisations WHERE card_id = $1 AND at > now() - interval '1 day'`,
		a.CardID).Scan(&spentToday); err != nil {
		return fmt.Errorf("velocity: %w", err)
	}
	points := rs.CountryRisk[a.Country] + rs.MCCRisk[a.MCC]
	if lim, ok := rs.Velocity[a.MCC]; ok && spentToday+a.AmountCents > lim {
		points += 40
	}
	held := points >= rs.BlockAtScore
	if _, err := tx.Exec(ctx,
		`INSERT INTO authorisations (id, card_id, amount_cents, score, rules_version, held, at) VALUES ($1, $2, $3, $4, $5, $6, now())`,
		a.AuthID, a.CardID, a.AmountCents, points, rs.Version, held); err != nil {
		return fmt.Errorf("store score: %w", err)
	}
	if !held {
		return nil
	}
	return outbox.Send(ctx, tx, "risk.review-needed", &consumer.Message{ID: msg.ID + ":review", Key: a.CardID, Body: msg.Body})
}
