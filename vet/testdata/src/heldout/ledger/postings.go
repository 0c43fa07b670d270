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
	Debit     string `json:"debit"`
	Credit    string `json:"credit"`
	Cents     int64  `json:"cents"`
}

func post(ctx context.Context, tx pgx.Tx, msgs []*consumer.Message) error {
	b := &pgx.Batch{}
	var sends []outbox.Outgoing
	for _, m := range msgs {
		var p posting
		if err := json.Unmarshal(m.Body, &p); err != nil {
			return consumer.Permanent(fmt.Errorf("message %s: %w", m.ID, err))
		}
		b.Queue(`INSERT INTO journal (id, account, cents) VALUES ($1, $2, $3)`, p.JournalID+"-d", p.Debit, -p.Cents)
		b.Queue(`INSERT INTO journal (id, account, cents) VALUES ($1, $2, $3)`, p.JournalID+"-c", p.Credit, p.Cents)
		body, _ := json.Marshal(p)
		sends = append(sends, outbox.Outgoing{
			Destination: "ledger.posted",
			Message:     &consumer.Message{ID: "posted-" + p.JournalID, Key: p.Debit, Body: body},
		})
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("journal batch: %w", err)
	}
	return outbox.SendBatch(ctx, tx, sends)
}

// Run consumes payments.postings in batches.
func Run(ctx context.Context, broker adapters.Broker, pool *pgxpool.Pool, log *slog.Logger) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "payments.postings", "ledger")
	if err != nil {
		return err
	}
	c, err := consumer.New(src, postgres.BatchHandlerFunc(post), consumer.Config{Name: "ledger", Concurrency: 4},
		dedupeTimed(st, log, 500*time.Millisecond))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
