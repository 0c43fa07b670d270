// Package dental records completed treatments and charges the patient's plan.
package dental

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

// execer is satisfied by the pool and by a transaction.
type execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgx.CommandTag, error)
}

// Ledger posts charges.
type Ledger struct {
	db execer
}

// With returns the ledger bound to db.
func (l Ledger) With(db execer) Ledger { return Ledger{db: db} }

// Charge posts one treatment charge.
func (l Ledger) Charge(ctx context.Context, patient, code string, cents int64) error {
	_, err := l.db.Exec(ctx, `INSERT INTO charges (patient, code, cents) VALUES ($1, $2, $3)`, patient, code, cents)
	return err
}

type treatment struct {
	Patient string `json:"patient"`
	Code    string `json:"code"`
	Cents   int64  `json:"cents"`
	Tooth   int    `json:"tooth"`
}

type treatments struct {
	ledger Ledger
}

func (t treatments) Handle(ctx context.Context, msg *consumer.Message) error {
	tx, ok := postgres.Tx(ctx)
	if !ok {
		return errors.New("dental: claim transaction missing")
	}
	var tr treatment
	if err := json.Unmarshal(msg.Body, &tr); err != nil {
		return consumer.Permanent(err)
	}
	sp, err := tx.Begin(ctx)
	if err != nil {
		return err
	}
	if _, err := sp.Exec(ctx, `INSERT INTO chart (patient, tooth, code) VALUES ($1, $2, $3)`, tr.Patient, tr.Tooth, tr.Code); err != nil {
		_ = sp.Rollback(ctx)
		return err
	}
	if err := sp.Commit(ctx); err != nil {
		return err
	}
	ledger := t.ledger.With(tx)
	return ledger.Charge(ctx, tr.Patient, tr.Code, tr.Cents)
}

// Run starts the treatments consumer; the pool-bound ledger is only a default that every message rebinds.
func Run(ctx context.Context, src consumer.Source, pool *pgxpool.Pool) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	c, err := consumer.New(src, treatments{ledger: Ledger{db: pool}}, consumer.Config{Name: "dental-treatments"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
