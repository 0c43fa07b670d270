// Package gapbugspoolrename is a corpus handler package with a bug (see
// vet/corpus_test.go): the invoice is written to a temporary file and
// renamed into the accounting system's pick-up directory inside the
// claim's transaction; the file stays there when the claim rolls back,
// and a redelivery drops it again.
package gapbugspoolrename

import (
	"context"
	"os"
	"path/filepath"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

type invoicer struct{ pickup string }

func (iv invoicer) publish(m *consumer.Message) error {
	tmp, err := os.CreateTemp(iv.pickup, ".invoice-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(m.Body); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), filepath.Join(iv.pickup, m.Key+".xml")) // want `the file-system write os.Rename is an effect outside the database`
}

func (iv invoicer) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	if _, err := tx.Exec(ctx, "UPDATE invoices SET issued = true WHERE id = $1", m.Key); err != nil {
		return err
	}
	return iv.publish(m)
}

// Start wires the invoicer behind the Postgres claim.
func Start(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker, pickup string) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "billing", "invoices")
	if err != nil {
		return err
	}
	c, err := consumer.New(src, postgres.HandlerFunc(invoicer{pickup: pickup}.handle), consumer.Config{Name: "invoices"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
