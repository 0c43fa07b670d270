package renewals

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/outbox"
	"github.com/oncely/oncely/store/postgres"
)

type renewalDue struct {
	SubscriptionID string    `json:"subscription_id"`
	PeriodEnd      time.Time `json:"period_end"`
	Months         int       `json:"months"`
}

// renewer extends subscriptions whose period ends and asks billing to
// charge for the next one.
type renewer struct{}

func (renewer) Handle(ctx context.Context, msg *consumer.Message) error {
	tx, ok := postgres.Tx(ctx)
	if !ok {
		return errors.New("renewals: no claim transaction")
	}
	var r renewalDue
	if err := json.Unmarshal(msg.Body, &r); err != nil {
		return consumer.Permanent(err)
	}
	next := r.PeriodEnd.AddDate(0, r.Months, 0)
	if _, err := tx.Exec(ctx,
		`UPDATE subscriptions SET period_end = $2 WHERE id = $1 AND period_end = $3 AND status = 'active'`,
		r.SubscriptionID, next, r.PeriodEnd); err != nil {
		return fmt.Errorf("renewals: extend %s: %w", r.SubscriptionID, err)
	}
	body, err := json.Marshal(map[string]any{"subscription_id": r.SubscriptionID, "period_start": r.PeriodEnd, "period_end": next})
	if err != nil {
		return err
	}
	return outbox.Send(ctx, tx, "billing.charge-requested", &consumer.Message{Key: r.SubscriptionID, Body: body})
}

type reminderSent struct {
	SubscriptionID string    `json:"subscription_id"`
	SentAt         time.Time `json:"sent_at"`
}

// reminderLog stores when the last renewal reminder went out.
type reminderLog struct {
	pool *pgxpool.Pool
}

func (l *reminderLog) Handle(ctx context.Context, msg *consumer.Message) error {
	var r reminderSent
	if err := json.Unmarshal(msg.Body, &r); err != nil {
		return consumer.Permanent(err)
	}
	_, err := l.pool.Exec(ctx,
		`UPDATE subscriptions SET reminded_at = greatest(coalesce(reminded_at, $2), $2) WHERE id = $1`,
		r.SubscriptionID, r.SentAt)
	return err
}
