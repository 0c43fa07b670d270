// Package settlements books card-scheme settlement files.
package settlements

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

	"heldout/platform/flags"
	"heldout/platform/metrics"
)

var (
	booked  = metrics.NewCounter("settlements_booked_total")
	skipped = metrics.NewCounter("settlements_skipped_total")
)

type settlement struct {
	FileID  string `json:"file_id"`
	Scheme  string `json:"scheme"`
	Entries []struct {
		TxnID string `json:"txn_id"`
		Cents int64  `json:"cents"`
		Fee   int64  `json:"fee_cents"`
	} `json:"entries"`
}

// Booker books settlements.
type Booker struct {
	flags *flags.Client
}

func (b *Booker) book(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var s settlement
	if err := json.Unmarshal(msg.Body, &s); err != nil {
		return consumer.Permanent(err)
	}
	if b.flags.Enabled("settlements.pause." + s.Scheme) {
		skipped.Inc(s.Scheme)
		return fmt.Errorf("scheme %s paused by flag", s.Scheme)
	}
	var fees int64
	for _, e := range s.Entries {
		if _, err := tx.Exec(ctx, `UPDATE card_txns SET settled_cents = $2, fee_cents = $3 WHERE id = $1`, e.TxnID, e.Cents, e.Fee); err != nil {
			return fmt.Errorf("txn %s: %w", e.TxnID, err)
		}
		fees += e.Fee
	}
	if _, err := tx.Exec(ctx, `INSERT INTO settlement_files (id, scheme, fees_cents) VALUES ($1, $2, $3)`, s.FileID, s.Scheme, fees); err != nil {
		return err
	}
	booked.Add(s.Scheme, float64(len(s.Entries)))
	return nil
}

// Run consumes settlement files. The chain is built once so the HTTP replay
// endpoint can reuse it.
func Run(ctx context.Context, broker adapters.Broker, pool *pgxpool.Pool, fl *flags.Client) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	b := &Booker{flags: fl}
	chain := consumer.Chain(postgres.HandlerFunc(b.book), middleware.Logging(), middleware.Idempotency(st))
	src, err := broker.Source(ctx, "schemes.settlements", "settlements")
	if err != nil {
		return err
	}
	c, err := consumer.New(src, chain, consumer.Config{Name: "settlements", Concurrency: 1})
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
