// Package flowokscheduler is a correct corpus package: a follow-up
// scheduled on the platform's scheduler with the IDs it needs; the job
// opens its own work later, and never sees the handler's transaction.
package flowokscheduler

import (
	"context"
	"time"

	"corpus/internal/jobs"
	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type notifier interface {
	Remind(ctx context.Context, userID string) error
}

type handler struct {
	sched  *jobs.Scheduler
	notify notifier
}

func (h *handler) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	user := m.ID
	if _, err := tx.Exec(ctx, "UPDATE trials SET started_at = now() WHERE user_id = $1", user); err != nil {
		return err
	}
	h.sched.After(24*time.Hour, func(jobCtx context.Context) error {
		return h.notify.Remind(jobCtx, user)
	})
	return nil
}

// New builds the handler.
func New(sched *jobs.Scheduler, n notifier) consumer.Handler {
	return postgres.HandlerFunc((&handler{sched: sched, notify: n}).handle)
}
