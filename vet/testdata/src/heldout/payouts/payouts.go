// Package payouts records merchant payout batches.
package payouts

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
	"golang.org/x/sync/errgroup"
)

type payoutBatch struct {
	BatchID    string       `json:"batch_id"`
	MerchantID string       `json:"merchant_id"`
	Lines      []payoutLine `json:"lines"`
}

type payoutLine struct {
	Reference   string `json:"reference"`
	AmountCents int64  `json:"amount_cents"`
}

// Handler records payout batches.
type Handler struct {
	maxParallel int
}

func (h *Handler) record(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var b payoutBatch
	if err := json.Unmarshal(msg.Body, &b); err != nil {
		return consumer.Permanent(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO payout_batches (id, merchant_id) VALUES ($1, $2)`, b.BatchID, b.MerchantID); err != nil {
		return fmt.Errorf("batch: %w", err)
	}
	// Large batches have thousands of lines; insert them in parallel.
	g, gctx := errgroup.WithContext(ctx)
	for _, line := range b.Lines {
		line := line
		g.Go(func() error { // want "tx used from errgroup goroutines"
			_, err := tx.Exec(gctx,
				`INSERT INTO payout_lines (batch_id, reference, amount_cents) VALUES ($1, $2, $3)`,
				b.BatchID, line.Reference, line.AmountCents)
			return err
		})
	}
	return g.Wait()
}

// Run consumes payout batches.
func Run(ctx context.Context, broker adapters.Broker, pool *pgxpool.Pool) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "payouts.batches", "payouts")
	if err != nil {
		return err
	}
	h := &Handler{maxParallel: 8}
	c, err := consumer.New(src, postgres.HandlerFunc(h.record), consumer.Config{Name: "payouts"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
