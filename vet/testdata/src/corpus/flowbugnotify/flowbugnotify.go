// Package flowbugnotify is a corpus package: a push notification sent
// through the team's own client package from inside the claim's
// transaction.
package flowbugnotify

import (
	"context"

	"corpus/internal/notify"
	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type shipped struct{ notify *notify.Client }

func (s *shipped) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	var user string
	if err := tx.QueryRow(ctx, "UPDATE shipments SET shipped = true WHERE id = $1 RETURNING user_id", m.ID).Scan(&user); err != nil {
		return err
	}
	return s.notify.Push(ctx, user, "your parcel is on its way") // want `effect outside the database`
}

// New builds the handler.
func New(n *notify.Client) consumer.Handler {
	return postgres.HandlerFunc((&shipped{notify: n}).handle)
}
