// Package lateokmailrelay is a held-out corpus package (fifth round): the
// handler queues the e-mail in the claim's transaction; a sender outside
// any handler mails it.
package lateokmailrelay

import (
	"context"
	"net/smtp"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

func Handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	_, err := tx.Exec(ctx, "INSERT INTO mail_queue (order_id) VALUES ($1)", m.ID)
	return err
}

var _ = postgres.HandlerFunc(Handle)

// Send mails one queued receipt and marks it sent.
func Send(ctx context.Context, pool *pgxpool.Pool, addr string) error {
	var id string
	if err := pool.QueryRow(ctx, "SELECT order_id FROM mail_queue WHERE sent = false LIMIT 1").Scan(&id); err != nil {
		return err
	}
	if err := smtp.SendMail(addr, nil, "shop@example.com", []string{"buyer@example.com"}, []byte("receipt "+id)); err != nil {
		return err
	}
	_, err := pool.Exec(ctx, "UPDATE mail_queue SET sent = true WHERE order_id = $1", id)
	return err
}
