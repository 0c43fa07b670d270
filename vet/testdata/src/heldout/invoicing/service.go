// Package invoicing issues credit notes for returns.
package invoicing

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"

	"heldout/invoicing/internal/repo"
)

// Service issues credit notes and serves them over HTTP.
type Service struct {
	repo *repo.Repo
}

// NewService returns a Service whose API reads through pool.
func NewService(pool *pgxpool.Pool) *Service {
	return &Service{repo: repo.New(pool)}
}

type returnAccepted struct {
	ReturnID    string `json:"return_id"`
	InvoiceID   string `json:"invoice_id"`
	RefundCents int64  `json:"refund_cents"`
}

func (s *Service) onReturn(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var ev returnAccepted
	if err := json.Unmarshal(msg.Body, &ev); err != nil {
		return consumer.Permanent(err)
	}
	r := s.repo.WithTx(tx)
	if err := r.InsertCreditNote(ctx, repo.CreditNote{ID: "cn-" + ev.ReturnID, InvoiceID: ev.InvoiceID, AmountCents: ev.RefundCents}); err != nil {
		return fmt.Errorf("credit note: %w", err)
	}
	return r.ReduceOutstanding(ctx, ev.InvoiceID, ev.RefundCents)
}

// Run consumes returns.accepted.
func (s *Service) Run(ctx context.Context, broker adapters.Broker, pool *pgxpool.Pool) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "returns.accepted", "invoicing")
	if err != nil {
		return err
	}
	c, err := consumer.New(src, postgres.HandlerFunc(s.onReturn), consumer.Config{Name: "invoicing"},
		middleware.Logging(), middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
