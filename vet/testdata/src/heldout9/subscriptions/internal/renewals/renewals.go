// Package renewals renews subscriptions when their period ends.
package renewals

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

// usageWriter batches usage rows of one renewal.
type usageWriter struct {
	tx   pgx.Tx
	rows [][]any
}

func (w *usageWriter) add(sub string, units int64) { w.rows = append(w.rows, []any{sub, units}) }

// Flush writes the batched rows.
func (w *usageWriter) Flush(ctx context.Context) error {
	for _, r := range w.rows {
		if _, err := w.tx.Exec(ctx, `INSERT INTO usage_snapshots (subscription, units) VALUES ($1, $2)`, r...); err != nil {
			return err
		}
	}
	return nil
}

// Later queues work for the background flusher.
type Later interface {
	Add(fn func(context.Context) error)
}

// Service renews subscriptions.
type Service struct {
	later Later
	now   func() time.Time
}

// New returns the service.
func New(later Later) *Service { return &Service{later: later, now: time.Now} }

type periodEnded struct {
	Subscription string `json:"subscription"`
	Plan         string `json:"plan"`
	Units        int64  `json:"units"`
}

// Handlers returns the service's handlers by topic.
func (s *Service) Handlers() map[string]consumer.Handler {
	return map[string]consumer.Handler{
		"subscriptions.period-ended": postgres.HandlerFunc(s.renew),
		"subscriptions.cancelled":    postgres.HandlerFunc(s.cancel),
	}
}

func (s *Service) renew(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var ev periodEnded
	if err := json.Unmarshal(msg.Body, &ev); err != nil {
		return consumer.Permanent(err)
	}
	next := s.now().AddDate(0, 1, 0)
	if _, err := tx.Exec(ctx, `UPDATE subscriptions SET renews_at = $2 WHERE id = $1`, ev.Subscription, next); err != nil {
		return err
	}
	w := &usageWriter{tx: tx}
	w.add(ev.Subscription, ev.Units)
	s.later.Add(w.Flush) // want "."
	return nil
}

func (s *Service) cancel(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	_, err := tx.Exec(ctx, `UPDATE subscriptions SET cancelled_at = now() WHERE id = $1`, msg.Key)
	return err
}
