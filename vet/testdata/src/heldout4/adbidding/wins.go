// Package adbidding settles auction wins reported by the exchange.
package adbidding

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
)

type auctionWon struct {
	AuctionID   string `json:"auction_id"`
	CampaignID  string `json:"campaign_id"`
	ClearingCPM int64  `json:"clearing_cpm_micros"`
	Impressions int64  `json:"impressions"`
}

// winSettler records a won auction and charges the campaign.
type winSettler struct {
	*budgetRepo
	pacingFloor int64
}

func (w *winSettler) settle(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var ev auctionWon
	if err := json.Unmarshal(msg.Body, &ev); err != nil {
		return consumer.Permanent(fmt.Errorf("decode win: %w", err))
	}
	cost := ev.ClearingCPM * ev.Impressions / 1000
	left, err := w.remaining(ctx, tx, ev.CampaignID)
	if err != nil {
		return err
	}
	if _, err := tx.Exec(ctx,
		`INSERT INTO auction_wins (auction_id, campaign_id, cost_micros, over_budget) VALUES ($1, $2, $3, $4)`,
		ev.AuctionID, ev.CampaignID, cost, left < cost); err != nil {
		return fmt.Errorf("record win: %w", err)
	}
	if left-cost < w.pacingFloor {
		if _, err := tx.Exec(ctx, `UPDATE campaigns SET paused = true WHERE id = $1`, ev.CampaignID); err != nil {
			return fmt.Errorf("pause campaign: %w", err)
		}
	}
	return w.debit(ctx, ev.CampaignID, cost) // want "budget debit through the embedded repository pool, outside the claim transaction"
}
