// Package notifications sends welcome mail to new users.
package notifications

import (
	"context"
	"fmt"
	"net/smtp"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

type sendFunc func(addr string, a smtp.Auth, from string, to []string, msg []byte) error

type welcomer struct {
	relay string
	send  sendFunc
}

func newWelcomer(relay string) *welcomer {
	return &welcomer{relay: relay, send: smtp.SendMail}
}

func (w *welcomer) handle(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	email := msg.Headers["email"]
	if _, err := tx.Exec(ctx, `INSERT INTO welcomed (user_id, email) VALUES ($1, $2)`, msg.Key, email); err != nil {
		return fmt.Errorf("mark welcomed: %w", err)
	}
	body := []byte("Subject: Welcome\r\n\r\nThanks for signing up.")
	return w.send(w.relay, nil, "hello@example.com", []string{email}, body) // want "mail"
}

// Run wires the welcome consumer.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "users.created", "welcome")
	if err != nil {
		return err
	}
	w := newWelcomer("smtp.internal:25")
	c, err := consumer.New(src, postgres.HandlerFunc(w.handle), consumer.Config{Name: "welcome"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
