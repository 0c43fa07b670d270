package notifications

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/outbox"

	"heldout/notifications/prefs"
)

// Notifier queues one outgoing notification per channel a user chose.
type Notifier struct {
	deps prefs.Deps
}

type userEvent struct {
	EventID string `json:"event_id"`
	UserID  string `json:"user_id"`
	Kind    string `json:"kind"`
	Text    string `json:"text"`
}

func (n *Notifier) notify(ctx context.Context, tx pgx.Tx, ev userEvent) error {
	channels, err := n.deps.Channels(ctx, ev.UserID)
	if err != nil {
		return fmt.Errorf("prefs: %w", err)
	}
	now := time.Now()
	for i, ch := range channels {
		body, _ := json.Marshal(map[string]string{"user": ev.UserID, "text": ev.Text})
		out := &consumer.Message{ID: fmt.Sprintf("%s-%d", ev.EventID, i), Key: ev.UserID, Body: body}
		if err := outbox.Send(ctx, tx, "notify."+string(ch), out); err != nil {
			return err
		}
		if err := n.deps.RecordDelivery(ctx, ev.UserID, ch, now); err != nil { // want "delivery recorded through the pool"
			return err
		}
	}
	return nil
}
