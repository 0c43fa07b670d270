// Package gamingrewards grants daily-quest rewards to players' inventories,
// many completions at a time.
package gamingrewards

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/outbox"
)

type questCompleted struct {
	PlayerID string `json:"player_id"`
	QuestID  string `json:"quest_id"`
}

type reward struct {
	ItemID string
	Qty    int
	Gems   int
}

// Granter grants quest rewards from the catalogue loaded at start-up.
type Granter struct {
	catalogue map[string]reward
}

func (g *Granter) grant(ctx context.Context, tx pgx.Tx, msgs []*consumer.Message) error {
	b := &pgx.Batch{}
	sends := make([]outbox.Outgoing, 0, len(msgs))
	for _, m := range msgs {
		var q questCompleted
		if err := json.Unmarshal(m.Body, &q); err != nil {
			return consumer.Permanent(fmt.Errorf("decode completion %s: %w", m.ID, err))
		}
		rw, ok := g.catalogue[q.QuestID]
		if !ok {
			return consumer.Permanent(fmt.Errorf("unknown quest %s", q.QuestID))
		}
		b.Queue(`INSERT INTO inventory (player_id, item_id, qty) VALUES ($1, $2, $3)
			ON CONFLICT (player_id, item_id) DO UPDATE SET qty = inventory.qty + EXCLUDED.qty`, q.PlayerID, rw.ItemID, rw.Qty)
		b.Queue(`UPDATE wallets SET gems = gems + $2 WHERE player_id = $1`, q.PlayerID, rw.Gems)
		body, err := json.Marshal(map[string]any{"player_id": q.PlayerID, "item_id": rw.ItemID, "qty": rw.Qty})
		if err != nil {
			return err
		}
		sends = append(sends, outbox.Outgoing{
			Destination: "game.push-notification",
			Message:     &consumer.Message{ID: m.ID + ":push", Key: q.PlayerID, Body: body},
		})
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("grant rewards: %w", err)
	}
	return outbox.SendBatch(ctx, tx, sends)
}
