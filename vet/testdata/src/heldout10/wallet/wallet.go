// Package wallet applies top-ups and spends from NATS to customer wallets and
// runs the outbox relay for the wallet.changed events in the same process.
// The handler takes the claim's transaction from the context, as the team's
// other services do.
package wallet

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/outbox"
	"github.com/oncely/oncely/store/postgres"
)

// Config wires the service.
type Config struct {
	NATS string
	Pool *pgxpool.Pool
	Mux  *http.ServeMux
}

var errNoTx = errors.New("wallet: handler run outside a claim")

// Run consumes wallet operations until ctx ends.
func Run(ctx context.Context, cfg Config) error {
	pool := cfg.Pool
	cfg.Mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		if err := pool.Ping(r.Context()); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})

	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	b, err := adapters.Open(ctx, cfg.NATS)
	if err != nil {
		return err
	}
	relay, err := outbox.NewRelay(pool, b, outbox.Config{})
	if err != nil {
		return err
	}
	relayDone := make(chan error, 1)
	go func() { relayDone <- relay.Run(ctx) }()

	src, err := b.Source(ctx, "wallet.ops", "wallet")
	if err != nil {
		return err
	}

	txOf := func(ctx context.Context) (pgx.Tx, error) {
		tx, ok := postgres.Tx(ctx)
		if !ok {
			return nil, errNoTx
		}
		return tx, nil
	}

	h := consumer.HandlerFunc(func(ctx context.Context, msg *consumer.Message) error {
		tx, err := txOf(ctx)
		if err != nil {
			return err
		}
		var op struct {
			Wallet string `json:"wallet"`
			Kind   string `json:"kind"`
			Cents  int64  `json:"cents"`
		}
		if err := json.Unmarshal(msg.Body, &op); err != nil {
			return consumer.Permanent(err)
		}
		delta := op.Cents
		if op.Kind == "spend" {
			delta = -delta
		}
		var balance int64
		if err := tx.QueryRow(ctx, `UPDATE wallets SET cents = cents + $2 WHERE id = $1 RETURNING cents`, op.Wallet, delta).Scan(&balance); err != nil {
			return err
		}
		if balance < 0 {
			return consumer.Permanent(errors.New("insufficient funds"))
		}
		body, _ := json.Marshal(map[string]any{"wallet": op.Wallet, "balance": balance})
		return outbox.Send(ctx, tx, "wallet.changed", &consumer.Message{Key: op.Wallet, Body: body})
	})

	c, err := consumer.New(src, h, consumer.Config{Name: "wallet"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	runErr := c.Run(ctx)
	return errors.Join(runErr, <-relayDone)
}
