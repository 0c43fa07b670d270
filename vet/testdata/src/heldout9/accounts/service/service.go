// Package service updates accounts after each transaction.
package service

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
	"golang.org/x/sync/errgroup"

	"heldout9/accounts/repo"
)

// Service updates accounts.
type Service struct {
	limits   *repo.Limits
	profiles *repo.Profiles
}

// New returns the service over pool.
func New(pool *pgxpool.Pool) *Service {
	return &Service{limits: repo.NewLimits(pool), profiles: repo.NewProfiles(pool)}
}

type settled struct {
	Accounts []string `json:"accounts"`
	Amount   int64    `json:"amount"`
}

func (s *Service) settled(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var ev settled
	if err := json.Unmarshal(msg.Body, &ev); err != nil {
		return consumer.Permanent(err)
	}
	profiles := s.profiles.WithTx(tx)
	g, gctx := errgroup.WithContext(ctx)
	for _, acct := range ev.Accounts {
		if _, err := tx.Exec(ctx, `INSERT INTO history (account, amount, message_id) VALUES ($1, $2, $3)`, acct, ev.Amount, msg.ID); err != nil {
			return err
		}
		if err := profiles.Touch(ctx, acct); err != nil {
			return err
		}
		g.Go(func() error { return s.limits.WithTx(tx).Recalc(gctx, acct) }) // want "."
	}
	return g.Wait()
}

func (s *Service) closed(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	_, err := tx.Exec(ctx, `UPDATE profiles SET closed = true WHERE account = $1`, msg.Key)
	return err
}

// Run wires the account consumers.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	s := New(pool)
	g, gctx := errgroup.WithContext(ctx)
	for _, r := range []struct {
		topic string
		h     consumer.Handler
	}{
		{"transactions.settled", postgres.HandlerFunc(s.settled)},
		{"accounts.closed", postgres.HandlerFunc(s.closed)},
	} {
		src, err := broker.Source(ctx, r.topic, "accounts")
		if err != nil {
			return err
		}
		c, err := consumer.New(src, r.h, consumer.Config{Name: "accounts-" + r.topic}, middleware.Idempotency(st))
		if err != nil {
			return err
		}
		g.Go(func() error { return c.Run(gctx) })
	}
	return g.Wait()
}
