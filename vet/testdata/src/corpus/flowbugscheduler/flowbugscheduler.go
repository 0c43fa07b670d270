// Package flowbugscheduler is a corpus package: a reminder scheduled on the
// platform's job scheduler, in a closure that writes through the handler's
// transaction — it runs a minute later, long after the claim committed.
package flowbugscheduler

import (
	"context"
	"strings"
	"time"

	"corpus/internal/jobs"
	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type cartAbandoned struct {
	CartID string `json:"cart_id"`
	UserID string `json:"user_id"`
}

type handler struct{ sched *jobs.Scheduler }

func (h *handler) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	ev := cartAbandoned{CartID: m.ID, UserID: strings.SplitN(m.ID, ":", 2)[0]}
	if _, err := tx.Exec(ctx, "UPDATE carts SET abandoned_at = now() WHERE id = $1", ev.CartID); err != nil {
		return err
	}
	h.sched.After(time.Minute, func(ctx context.Context) error { // want `reaches another goroutine|stored`
		_, err := tx.Exec(ctx, "INSERT INTO reminders (user_id, cart_id) VALUES ($1, $2)", ev.UserID, ev.CartID)
		return err
	})
	return nil
}

// New builds the handler over the shared scheduler.
func New(sched *jobs.Scheduler) consumer.Handler {
	return postgres.HandlerFunc((&handler{sched: sched}).handle)
}
