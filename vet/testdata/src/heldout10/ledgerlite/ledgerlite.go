// Package ledgerlite posts journal entries from RabbitMQ. Each entry's
// balance recomputation is handed to a small pool of workers so the handler
// returns without waiting for it.
package ledgerlite

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

// Config wires the service.
type Config struct {
	AMQP    string // amqp://ledger:secret@rabbit:5672/finance
	Pool    *pgxpool.Pool
	Workers int
	Log     *slog.Logger
}

type recompute struct {
	ctx     context.Context
	tx      pgx.Tx
	account string
}

// Run consumes journal entries until ctx ends.
func Run(ctx context.Context, cfg Config) error {
	n := cfg.Workers
	if n == 0 {
		n = 4
	}
	jobs := make(chan recompute)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-ctx.Done():
					return
				case j := <-jobs:
					if _, err := j.tx.Exec(j.ctx, `UPDATE accounts SET balance = (SELECT coalesce(sum(amount), 0) FROM entries WHERE account_id = $1) WHERE id = $1`, j.account); err != nil {
						cfg.Log.Warn("balance recompute", "account", j.account, "err", err)
					}
				}
			}
		}()
	}
	defer wg.Wait()

	st, err := postgres.New(cfg.Pool)
	if err != nil {
		return err
	}
	b, err := adapters.Open(ctx, cfg.AMQP)
	if err != nil {
		return err
	}
	src, err := b.Source(ctx, "journal", "ledgerlite")
	if err != nil {
		return err
	}

	h := postgres.HandlerFunc(func(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
		var e struct {
			Account string `json:"account"`
			Amount  int64  `json:"amount"`
		}
		if err := json.Unmarshal(msg.Body, &e); err != nil {
			return consumer.Permanent(err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO entries (account_id, amount, message_id) VALUES ($1, $2, $3)`, e.Account, e.Amount, msg.ID); err != nil {
			return err
		}
		select {
		case jobs <- recompute{ctx: ctx, tx: tx, account: e.Account}: // want "."
		case <-ctx.Done():
			return ctx.Err()
		}
		return nil
	})

	c, err := consumer.New(src, h, consumer.Config{Name: "ledgerlite"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
