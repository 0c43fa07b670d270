// Package ledger posts double-entry journal lines for payments and tells
// downstream consumers about the new balances through the outbox.
package ledger

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/outbox"
	"github.com/oncely/oncely/store/postgres"
)

type posting struct {
	JournalID string `json:"journal_id"`
	Legs      []struct {
		Account string `json:"account"`
		Cents   int64  `json:"cents"`
	} `json:"legs"`
}

// post books one journal entry: one row per leg, sent as one batch, and a
// "posted" event through the outbox for each account touched.
func post(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var p posting
	if err := json.Unmarshal(msg.Body, &p); err != nil {
		return consumer.Permanent(fmt.Errorf("message %s: %w", msg.ID, err))
	}
	var sum int64
	b := &pgx.Batch{}
	var sends []outbox.Outgoing
	for i, leg := range p.Legs {
		sum += leg.Cents
		b.Queue(`INSERT INTO journal (id, leg, account, cents) VALUES ($1, $2, $3, $4)`, p.JournalID, i, leg.Account, leg.Cents)
		body, _ := json.Marshal(map[string]any{"journal_id": p.JournalID, "account": leg.Account, "cents": leg.Cents})
		sends = append(sends, outbox.Outgoing{
			Destination: "ledger.posted",
			Message:     &consumer.Message{ID: fmt.Sprintf("posted-%s-%d", p.JournalID, i), Key: leg.Account, Body: body},
		})
	}
	if sum != 0 {
		return consumer.Permanent(fmt.Errorf("journal %s does not balance: %d", p.JournalID, sum))
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("journal batch: %w", err)
	}
	return outbox.SendBatch(ctx, tx, sends)
}

// Run consumes payments.postings.
func Run(ctx context.Context, broker adapters.Broker, pool *pgxpool.Pool, log *slog.Logger) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "payments.postings", "ledger")
	if err != nil {
		return err
	}
	c, err := consumer.New(src, postgres.HandlerFunc(post), consumer.Config{Name: "ledger", Concurrency: 4},
		dedupeTimed(st, log, 500*time.Millisecond))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
