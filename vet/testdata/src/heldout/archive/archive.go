// Package archive moves closed support tickets into cold storage tables.
package archive

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

// Archiver archives tickets.
type Archiver struct {
	log *slog.Logger
}

type ticketClosed struct {
	TicketID    string   `json:"ticket_id"`
	Attachments []string `json:"attachments"`
}

func (a *Archiver) archive(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var ev ticketClosed
	if err := json.Unmarshal(msg.Body, &ev); err != nil {
		return consumer.Permanent(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO tickets_archive SELECT * FROM tickets WHERE id = $1`, ev.TicketID); err != nil {
		return err
	}
	for _, att := range ev.Attachments {
		// A missing attachment must not keep the ticket out of the archive.
		err := withSavepoint(ctx, tx, func(sp pgx.Tx) error {
			_, err := sp.Exec(ctx, `INSERT INTO attachments_archive SELECT * FROM attachments WHERE id = $1`, att)
			return err
		})
		if err != nil {
			a.log.Warn("attachment not archived", "ticket", ev.TicketID, "attachment", att, "err", err)
		}
	}
	_, err := tx.Exec(ctx, `DELETE FROM tickets WHERE id = $1`, ev.TicketID)
	return err
}

// Run consumes support.tickets_closed.
func Run(ctx context.Context, broker adapters.Broker, pool *pgxpool.Pool, log *slog.Logger) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "support.tickets_closed", "archive")
	if err != nil {
		return err
	}
	a := &Archiver{log: log}
	c, err := consumer.New(src, postgres.HandlerFunc(a.archive), consumer.Config{Name: "archive"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
