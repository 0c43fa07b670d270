// Package atelier tracks commissioned pieces through the workshop and tells
// the client portal about every stage.
package atelier

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"

	"heldout8/atelier/commission"
	"heldout8/atelier/outboxpub"
)

type stageLogged struct {
	PieceID string           `json:"piece_id"`
	Stage   commission.Stage `json:"stage"`
}

// Workshop is the stage handler.
type Workshop struct {
	publisherFor func(tx pgx.Tx) commission.EventPublisher
}

// NewWorkshop returns a workshop announcing through the outbox.
func NewWorkshop() *Workshop {
	return &Workshop{publisherFor: func(tx pgx.Tx) commission.EventPublisher { return outboxpub.In(tx) }}
}

func (w *Workshop) current(ctx context.Context, tx pgx.Tx, piece string) (commission.Stage, string, error) {
	var stage, client string
	err := tx.QueryRow(ctx, `SELECT stage, client FROM pieces WHERE id = $1 FOR UPDATE`, piece).Scan(&stage, &client)
	return commission.Stage(stage), client, err
}

// LogStage moves a piece to its next stage and announces it.
func (w *Workshop) LogStage(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var s stageLogged
	if err := json.Unmarshal(msg.Body, &s); err != nil {
		return consumer.Permanent(err)
	}
	from, client, err := w.current(ctx, tx, s.PieceID)
	if err != nil {
		return err
	}
	if err := commission.Advance(from, s.Stage); err != nil {
		return consumer.Permanent(err)
	}
	if _, err := tx.Exec(ctx, `UPDATE pieces SET stage = $2 WHERE id = $1`, s.PieceID, s.Stage); err != nil {
		return err
	}
	return w.publisherFor(tx).Publish(ctx, "portal.stages", s.PieceID,
		commission.StageReached{PieceID: s.PieceID, Client: client, Stage: s.Stage})
}
