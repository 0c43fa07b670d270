// Package wallet credits wallets from top-up events.
package wallet

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"

	"heldout2/wallet/platform"
)

type topUp struct {
	WalletID string `json:"wallet_id"`
	Cents    int64  `json:"cents"`
}

type creditor struct {
	*platform.Deps
}

func (c *creditor) credit(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var t topUp
	if err := json.Unmarshal(msg.Body, &t); err != nil {
		return consumer.Permanent(fmt.Errorf("decode top-up: %w", err))
	}
	if _, err := tx.Exec(ctx, `INSERT INTO wallet_entries (wallet_id, cents, msg_id) VALUES ($1, $2, $3)`, t.WalletID, t.Cents, msg.ID); err != nil {
		return fmt.Errorf("insert entry: %w", err)
	}
	if _, err := c.Pool.Exec(ctx, `UPDATE wallets SET balance = balance + $2 WHERE id = $1`, t.WalletID, t.Cents); err != nil { // want "pool"
		return fmt.Errorf("update balance: %w", err)
	}
	c.Logger.Info("credited", "wallet", t.WalletID)
	return nil
}

// Run consumes top-ups until ctx ends.
func Run(ctx context.Context, deps *platform.Deps, broker adapters.Broker) error {
	st, err := postgres.New(deps.Pool)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "wallet.topups", "wallet-credit")
	if err != nil {
		return err
	}
	c := &creditor{Deps: deps}
	cons, err := consumer.New(src, postgres.HandlerFunc(c.credit), consumer.Config{Name: "wallet-credit"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return cons.Run(ctx)
}
