// Package museum handles ticket, membership and donation events from the front desk.
package museum

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/outbox"
	"github.com/oncely/oncely/store/postgres"
)

// routes maps the "type" header to its handler.
var routes = map[string]consumer.Handler{
	"ticket.sold":      postgres.HandlerFunc(ticketSold),
	"membership.begun": postgres.HandlerFunc(membershipBegun),
}

func ticketSold(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	_, err := tx.Exec(ctx, `INSERT INTO admissions (ticket_id, sold_at) VALUES ($1, now())`, msg.ID)
	return err
}

func membershipBegun(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	if _, err := tx.Exec(ctx, `INSERT INTO members (id, since) VALUES ($1, now())`, msg.Key); err != nil {
		return err
	}
	return outbox.Send(ctx, tx, "mailing.welcome", &consumer.Message{ID: "welcome-" + msg.ID, Key: msg.Key, Body: msg.Body})
}

type router struct{}

func (router) Handle(ctx context.Context, msg *consumer.Message) error {
	h, ok := routes[msg.Headers["type"]]
	if !ok {
		return consumer.Permanent(fmt.Errorf("museum: no route for %q", msg.Headers["type"]))
	}
	return h.Handle(ctx, msg)
}

// Run starts the front-desk consumer.
func Run(ctx context.Context, src consumer.Source, pool *pgxpool.Pool) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	c, err := consumer.New(src, router{}, consumer.Config{Name: "museum-frontdesk"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
