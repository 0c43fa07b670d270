// Package gapokscratchfile is a correct corpus handler package (see
// vet/corpus_test.go): the handler renders the statement into a
// temporary directory it removes before returning, digests it, keeps the
// digest on the claim's transaction, logs through slog and a
// bytes.Buffer, and opens its footer read-only; nothing outside the
// database stays.
package gapokscratchfile

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

type statements struct {
	log        *slog.Logger
	trace      *os.File
	footerPath string
}

func (s statements) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	dir, err := os.MkdirTemp("", "statement-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	page := filepath.Join(dir, "page.txt")
	var buf bytes.Buffer
	buf.WriteString("statement for ")
	buf.Write(m.Body)
	if err := os.WriteFile(page, buf.Bytes(), 0o600); err != nil {
		return err
	}
	rendered, err := os.ReadFile(page)
	if err != nil {
		return err
	}
	footer, err := os.OpenFile(s.footerPath, os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	defer footer.Close()
	sum := sha256.Sum256(rendered)
	s.log.InfoContext(ctx, "statement rendered", "account", m.Key, "bytes", len(rendered))
	if _, err := s.trace.WriteString("rendered " + m.Key + "\n"); err != nil {
		return err
	}
	_, err = tx.Exec(ctx, "UPDATE statements SET digest = $2 WHERE account = $1", m.Key, hex.EncodeToString(sum[:]))
	return err
}

// Start wires the statements behind the Postgres claim.
func Start(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "accounts", "statements")
	if err != nil {
		return err
	}
	s := statements{log: slog.Default(), trace: os.Stderr}
	c, err := consumer.New(src, postgres.HandlerFunc(s.handle), consumer.Config{Name: "statements"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
