package tickets

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
)

type inboundEmail struct {
	Queue   string    `json:"queue"`
	From    string    `json:"from"`
	Subject string    `json:"subject"`
	At      time.Time `json:"received_at"`
}

// openTicket files an inbound support e-mail as a ticket numbered per queue
// (SUP-1, SUP-2, …).
func (s *service) openTicket(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var e inboundEmail
	if err := json.Unmarshal(msg.Body, &e); err != nil {
		return consumer.Permanent(err)
	}
	var seq int64
	err := pgx.BeginFunc(ctx, s.pool, func(seqTx pgx.Tx) error { // want "ticket number taken in a transaction of its own on the pool, outside the claim's"
		return seqTx.QueryRow(ctx, `UPDATE ticket_counters SET next = next + 1 WHERE queue = $1 RETURNING next`, e.Queue).Scan(&seq)
	})
	if err != nil {
		return fmt.Errorf("tickets: next number for %s: %w", e.Queue, err)
	}
	_, err = tx.Exec(ctx,
		`INSERT INTO tickets (queue, number, requester, subject, due_at) VALUES ($1, $2, $3, $4, $5)`,
		e.Queue, seq, e.From, e.Subject, e.At.Add(s.sla))
	if err != nil {
		return fmt.Errorf("tickets: insert %s-%d: %w", e.Queue, seq, err)
	}
	s.log.InfoContext(ctx, "ticket opened", "queue", e.Queue, "number", seq)
	return nil
}
