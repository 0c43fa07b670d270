// Package alerts turns monitoring events into on-call incidents. Repeated
// events inside the silence window attach to the open incident.
package alerts

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/outbox"
	"github.com/oncely/oncely/store/postgres"
	"github.com/redis/go-redis/v9"
)

// Incidents opens and updates incidents.
type Incidents struct {
	// silences is maintained by the on-call UI; the consumer only reads it.
	silences *redis.Client
}

type monitorEvent struct {
	Check    string `json:"check"`
	Service  string `json:"service"`
	Severity string `json:"severity"`
	Summary  string `json:"summary"`
}

func (in *Incidents) handle(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var ev monitorEvent
	if err := json.Unmarshal(msg.Body, &ev); err != nil {
		return consumer.Permanent(err)
	}
	silencedBy, err := in.silences.Get(ctx, "silence:"+ev.Service+":"+ev.Check).Result()
	if err != nil && err.Error() != "redis: nil" {
		return fmt.Errorf("silence lookup: %w", err)
	}
	var incidentID string
	err = tx.QueryRow(ctx,
		`INSERT INTO incidents (service, check_name, severity, summary, silenced_by) VALUES ($1, $2, $3, $4, NULLIF($5, ''))
		 ON CONFLICT (service, check_name) WHERE open DO UPDATE SET events = incidents.events + 1
		 RETURNING id`, ev.Service, ev.Check, ev.Severity, ev.Summary, silencedBy).Scan(&incidentID)
	if err != nil {
		return err
	}
	if silencedBy != "" || ev.Severity != "critical" {
		return nil
	}
	page, _ := json.Marshal(map[string]string{"incident": incidentID, "summary": ev.Summary})
	return outbox.Send(ctx, tx, "pager.pages", &consumer.Message{ID: "page-" + msg.ID, Key: ev.Service, Body: page})
}

// Run consumes monitoring.events.
func Run(ctx context.Context, broker adapters.Broker, pool *pgxpool.Pool, redisAddr string) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "monitoring.events", "alerts")
	if err != nil {
		return err
	}
	in := &Incidents{silences: redis.NewClient(&redis.Options{Addr: redisAddr})}
	c, err := consumer.New(src, postgres.HandlerFunc(in.handle), consumer.Config{Name: "alerts"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
