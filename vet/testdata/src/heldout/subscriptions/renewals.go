// Package subscriptions renews subscriptions when their period ends.
package subscriptions

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Renewals extends subscriptions and announces the new period.
type Renewals struct {
	kafka *kgo.Client
	topic string
}

type periodEnded struct {
	SubscriptionID string    `json:"subscription_id"`
	PlanID         string    `json:"plan_id"`
	EndedAt        time.Time `json:"ended_at"`
}

type renewed struct {
	SubscriptionID string    `json:"subscription_id"`
	Until          time.Time `json:"until"`
}

func (r *Renewals) renew(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var ev periodEnded
	if err := json.Unmarshal(msg.Body, &ev); err != nil {
		return consumer.Permanent(err)
	}
	var months int
	if err := tx.QueryRow(ctx, `SELECT period_months FROM plans WHERE id = $1`, ev.PlanID).Scan(&months); err != nil {
		return fmt.Errorf("plan %s: %w", ev.PlanID, err)
	}
	until := ev.EndedAt.AddDate(0, months, 0)
	if _, err := tx.Exec(ctx, `UPDATE subscriptions SET paid_until = $2 WHERE id = $1`, ev.SubscriptionID, until); err != nil {
		return err
	}
	body, err := json.Marshal(renewed{SubscriptionID: ev.SubscriptionID, Until: until})
	if err != nil {
		return err
	}
	for _, res := range r.kafka.ProduceSync(ctx, &kgo.Record{Topic: r.topic, Value: body}) { // want "Kafka produce inside the transactional handler"
		if res.Err != nil {
			return fmt.Errorf("announce renewal: %w", res.Err)
		}
	}
	return nil
}
