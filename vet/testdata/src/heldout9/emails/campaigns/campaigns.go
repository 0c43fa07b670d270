// Package campaigns expands campaigns into e-mails (in the claim's
// transaction, through the outbox) and sends each e-mail (outside any
// transaction, deduplicated by the provider).
package campaigns

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/outbox"
	"github.com/oncely/oncely/store/postgres"

	"heldout9/emails/provider"
)

// Campaigns holds both stages.
type Campaigns struct {
	sender *provider.Client
}

type campaign struct {
	ID         string   `json:"id"`
	Template   string   `json:"template"`
	Recipients []string `json:"recipients"`
}

// Expand writes one outbox row per recipient.
func (c *Campaigns) Expand(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var cp campaign
	if err := json.Unmarshal(msg.Body, &cp); err != nil {
		return consumer.Permanent(err)
	}
	if _, err := tx.Exec(ctx, `UPDATE campaigns SET status = 'sending' WHERE id = $1`, cp.ID); err != nil {
		return err
	}
	sends := make([]outbox.Outgoing, 0, len(cp.Recipients))
	for _, r := range cp.Recipients {
		b, _ := json.Marshal(provider.Email{To: r, Template: cp.Template})
		sends = append(sends, outbox.Outgoing{Destination: "emails.send", Message: &consumer.Message{Key: r, Body: b}})
	}
	return outbox.SendBatch(ctx, tx, sends)
}

// Send sends one e-mail.
func (c *Campaigns) Send(ctx context.Context, msg *consumer.Message) error {
	var e provider.Email
	if err := json.Unmarshal(msg.Body, &e); err != nil {
		return consumer.Permanent(err)
	}
	return c.sender.Send(ctx, msg.ID, e)
}

// Wire builds both consumers.
func Wire(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker, sender *provider.Client) (expand, send *consumer.Consumer, err error) {
	st, err := postgres.New(pool)
	if err != nil {
		return nil, nil, err
	}
	c := &Campaigns{sender: sender}
	src, err := broker.Source(ctx, "campaigns.scheduled", "emails-expand")
	if err != nil {
		return nil, nil, err
	}
	expand, err = consumer.New(src, postgres.HandlerFunc(c.Expand), consumer.Config{Name: "emails-expand"}, middleware.Idempotency(st))
	if err != nil {
		return nil, nil, err
	}
	src, err = broker.Source(ctx, "emails.send", "emails-send")
	if err != nil {
		return nil, nil, err
	}
	cfg := consumer.Config{Name: "emails-send", Concurrency: 32}
	cfg.Duplicates = consumer.AllowDuplicates("the provider drops a repeated X-Dedupe-Key (the outbox message ID) for 24 h")
	send, err = consumer.New(src, consumer.HandlerFunc(c.Send), cfg, middleware.Logging())
	return expand, send, err
}
