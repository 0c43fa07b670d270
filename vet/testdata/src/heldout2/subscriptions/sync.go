// Package subscriptions mirrors plan changes to the CRM in batches.
package subscriptions

import (
	"bytes"
	"context"
	"fmt"
	"net/http"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

type crmSync struct {
	http *http.Client
	base string
}

func (s *crmSync) handleBatch(ctx context.Context, tx pgx.Tx, msgs []*consumer.Message) error {
	b := &pgx.Batch{}
	for _, m := range msgs {
		b.Queue(`UPDATE subscriptions SET plan = $2 WHERE id = $1`, m.Key, string(m.Body))
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("plans: %w", err)
	}
	for _, m := range msgs {
		if err := s.putPlan(ctx, m.Key, m.Body); err != nil {
			return err
		}
	}
	return nil
}

func (s *crmSync) putPlan(ctx context.Context, id string, plan []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, s.base+"/accounts/"+id+"/plan", bytes.NewReader(plan))
	if err != nil {
		return err
	}
	resp, err := s.http.Do(req) // want "outbox"
	if err != nil {
		return fmt.Errorf("crm: %w", err)
	}
	return resp.Body.Close()
}

// Run wires the CRM sync.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "plans.changed", "crm-sync")
	if err != nil {
		return err
	}
	s := &crmSync{http: http.DefaultClient, base: "https://crm.internal"}
	c, err := consumer.New(src, postgres.BatchHandlerFunc(s.handleBatch), consumer.Config{Name: "crm-sync"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
