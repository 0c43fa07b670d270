// Package loyalty credits loyalty points for batches of POS purchases.
package loyalty

import (
	"context"
	"encoding/json"
	"fmt"
	"net/smtp"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

type purchase struct {
	MemberID string `json:"member_id"`
	Email    string `json:"email"`
	Points   int    `json:"points"`
}

// Mailer holds the SMTP settings for member mail.
type Mailer struct {
	Addr string
	Auth smtp.Auth
	From string
}

// Crediter credits points.
type Crediter struct {
	Mail Mailer
}

func (c *Crediter) credit(ctx context.Context, tx pgx.Tx, msgs []*consumer.Message) error {
	for _, m := range msgs {
		var p purchase
		if err := json.Unmarshal(m.Body, &p); err != nil {
			return consumer.Permanent(err)
		}
		var balance int
		if err := tx.QueryRow(ctx, `UPDATE members SET points = points + $2 WHERE id = $1 RETURNING points`, p.MemberID, p.Points).Scan(&balance); err != nil {
			return err
		}
		if balance >= 1000 && balance-p.Points < 1000 {
			body := []byte(fmt.Sprintf("Subject: You reached Gold\r\n\r\nYou now have %d points.\r\n", balance))
			if err := smtp.SendMail(c.Mail.Addr, c.Mail.Auth, c.Mail.From, []string{p.Email}, body); err != nil { // want "gold tier e-mail sent inside the batch handler"
				return err
			}
		}
	}
	return nil
}

// Run consumes purchases in batches.
func Run(ctx context.Context, pool *pgxpool.Pool, src consumer.Source, mail Mailer) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	c := &Crediter{Mail: mail}
	cons, err := consumer.New(src, postgres.BatchHandlerFunc(c.credit), consumer.Config{Name: "loyalty"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return cons.Run(ctx)
}
