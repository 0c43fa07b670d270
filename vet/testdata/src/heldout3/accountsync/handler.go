package accountsync

import (
	"context"
	"encoding/json"
	"fmt"

	"heldout3/accountsync/db"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
)

type accountEvent struct {
	Type        string `json:"type"` // "updated" or "closed"
	ID          string `json:"id"`
	Email       string `json:"email"`
	DisplayName string `json:"display_name"`
}

type syncer struct {
	q *db.Queries
}

func (s *syncer) apply(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var e accountEvent
	if err := json.Unmarshal(msg.Body, &e); err != nil {
		return consumer.Permanent(err)
	}
	q := s.q.WithTx(tx)
	switch e.Type {
	case "updated":
		status, err := q.GetAccountStatus(ctx, e.ID)
		if err != nil {
			return fmt.Errorf("accountsync: status of %s: %w", e.ID, err)
		}
		return q.UpsertAccount(ctx, db.UpsertAccountParams{ID: e.ID, Email: e.Email, DisplayName: e.DisplayName, Status: status})
	case "closed":
		return q.CloseAccount(ctx, e.ID)
	default:
		return consumer.Permanent(fmt.Errorf("accountsync: unknown event type %q", e.Type))
	}
}
