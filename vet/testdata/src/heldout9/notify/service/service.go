// Package service renders notifications in the claim's transaction and
// delivers them from a separate, non-transactional consumer.
package service

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/outbox"

	"heldout9/notify/push"
	"heldout9/notify/templates"
)

// Service owns both halves.
type Service struct {
	templates *templates.Client
	push      *push.Sender
}

type event struct {
	User     string `json:"user"`
	Locale   string `json:"locale"`
	Template string `json:"template"`
}

type rendered struct {
	User string `json:"user"`
	Text string `json:"text"`
}

// Render records the notification and queues its delivery through the outbox.
func (s *Service) Render(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var ev event
	if err := json.Unmarshal(msg.Body, &ev); err != nil {
		return consumer.Permanent(err)
	}
	text, err := s.templates.Render(ctx, ev.Template, ev.Locale)
	if err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO notifications (id, user_id, text) VALUES ($1, $2, $3)`, msg.ID, ev.User, text); err != nil {
		return err
	}
	body, _ := json.Marshal(rendered{User: ev.User, Text: text})
	return outbox.Send(ctx, tx, "notify.deliver", &consumer.Message{Key: ev.User, Body: body})
}

// Deliver posts one rendered notification; the provider dedupes on the key.
func (s *Service) Deliver(ctx context.Context, msg *consumer.Message) error {
	var r rendered
	if err := json.Unmarshal(msg.Body, &r); err != nil {
		return consumer.Permanent(err)
	}
	return s.push.Send(ctx, msg.ID, r.User, r.Text)
}
