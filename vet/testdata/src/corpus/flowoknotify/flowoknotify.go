// Package flowoknotify is a correct corpus package: notification settings
// read through the team's client, the notification itself queued in the
// claim's transaction (an outbox row a relay sends).
package flowoknotify

import (
	"context"

	"corpus/internal/notify"
	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type shipped struct{ notify *notify.Client }

func (s *shipped) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	prefs, err := s.notify.Preferences(ctx, m.ID)
	if err != nil {
		return err
	}
	if !prefs["push"] {
		return nil
	}
	_, err = tx.Exec(ctx, "INSERT INTO outbox (topic, key, body) VALUES ('push', $1, 'your parcel is on its way')", m.ID)
	return err
}

// New builds the handler.
func New(n *notify.Client) consumer.Handler {
	return postgres.HandlerFunc((&shipped{notify: n}).handle)
}
