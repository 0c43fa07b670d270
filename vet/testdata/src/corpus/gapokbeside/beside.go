// Package gapokbeside is a corpus handler package (see vet/corpus_test.go):
// the twin of gapbugbeside. The orders chain has the platform's metrics
// middleware beside middleware.Idempotency; the refunds chain has the same
// metrics middleware and is given the platform's dedupe, which the package
// never chains beside a visible claim.
package gapokbeside

import (
	"context"

	"corpus/internal/platform"
	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

func order(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	_, err := tx.Exec(ctx, "INSERT INTO orders (id) VALUES ($1)", m.ID)
	return err
}

type refunds struct{}

func (refunds) Handle(ctx context.Context, m *consumer.Message) error { return nil }

// Wire starts both consumers.
func Wire(orders, refundSrc consumer.Source, st *postgres.Store) error {
	claimed := consumer.Chain(postgres.HandlerFunc(order), platform.Metrics(), middleware.Idempotency(st))
	if _, err := consumer.New(orders, claimed, consumer.Config{Name: "orders"}); err != nil {
		return err
	}
	logged := consumer.Chain(refunds{}, middleware.Logging(), platform.Metrics())
	_, err := consumer.New(refundSrc, logged, consumer.Config{Name: "refunds"}, platform.Dedupe(st))
	return err
}
