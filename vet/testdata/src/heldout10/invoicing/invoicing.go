// Package invoicing turns metered usage from NATS JetStream into invoice lines,
// a batch at a time.
package invoicing

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

// Config wires the service.
type Config struct {
	NATS string // nats://nats-0:4222,nats-1:4222
	Pool *pgxpool.Pool
}

type usage struct {
	Account string    `json:"account"`
	Meter   string    `json:"meter"`
	Qty     int64     `json:"qty"`
	At      time.Time `json:"at"`
}

// auditRows feeds CopyFrom.
type auditRows struct {
	rows [][]any
	i    int
}

func (a *auditRows) Next() bool { a.i++; return a.i <= len(a.rows) }

// Run consumes usage until ctx ends.
func Run(ctx context.Context, cfg Config) error {
	st, err := postgres.New(cfg.Pool)
	if err != nil {
		return err
	}
	b, err := adapters.Open(ctx, cfg.NATS)
	if err != nil {
		return err
	}
	src, err := b.Source(ctx, "usage.metered", "invoicing")
	if err != nil {
		return err
	}

	lines := postgres.BatchHandlerFunc(func(ctx context.Context, tx pgx.Tx, msgs []*consumer.Message) error {
		accounts := make([]string, 0, len(msgs))
		meters := make([]string, 0, len(msgs))
		qtys := make([]int64, 0, len(msgs))
		audit := &auditRows{}
		for _, m := range msgs {
			var u usage
			if err := json.Unmarshal(m.Body, &u); err != nil {
				continue // a bad line is logged by the producer's schema check
			}
			accounts = append(accounts, u.Account)
			meters = append(meters, u.Meter)
			qtys = append(qtys, u.Qty)
			audit.rows = append(audit.rows, []any{m.ID, u.Account, u.Meter, u.Qty, u.At})
		}
		if _, err := tx.Exec(ctx, `INSERT INTO invoice_lines (account_id, meter, qty)
			SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[])
			ON CONFLICT (account_id, meter) DO UPDATE SET qty = invoice_lines.qty + EXCLUDED.qty`, accounts, meters, qtys); err != nil {
			return err
		}
		_, err := cfg.Pool.CopyFrom(ctx, pgx.Identifier{"usage_audit"}, []string{"message_id", "account_id", "meter", "qty", "at"}, audit) // want "."
		return err
	})

	c, err := consumer.New(src, lines, consumer.Config{Name: "invoicing", Concurrency: 2}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
