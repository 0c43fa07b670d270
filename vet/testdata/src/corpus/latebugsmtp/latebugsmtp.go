// Package latebugsmtp is a held-out corpus package (fifth round): a
// receipt e-mailed inside the claim's transaction.
package latebugsmtp

import (
	"context"
	"net/smtp"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type mailer struct {
	addr string
	auth smtp.Auth
}

func (ml *mailer) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	if _, err := tx.Exec(ctx, "UPDATE orders SET receipt_sent = true WHERE id = $1", m.ID); err != nil {
		return err
	}
	return smtp.SendMail(ml.addr, ml.auth, "shop@example.com", []string{"buyer@example.com"}, []byte("receipt "+m.ID)) // want `outside the database`
}

func New(addr string) consumer.Handler {
	return postgres.HandlerFunc((&mailer{addr: addr}).handle)
}
