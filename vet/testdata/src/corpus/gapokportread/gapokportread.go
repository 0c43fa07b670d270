// Package gapokportread is a correct corpus handler package (see
// vet/corpus_test.go): the handler's event-log port is wired to a log of
// another package built on the pool, and the handler only reads through
// it (a count, a SELECT: it commits and repeats nothing); its write goes
// through the transaction.
package gapokportread

import (
	"context"

	"corpus/internal/eventlog"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

// History is the port the handler reads the stream's length from.
type History interface {
	Length(ctx context.Context, stream string) (int, error)
}

type handler struct{ history History }

func newHandler(history History) *handler { return &handler{history: history} }

func (h *handler) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	n, err := h.history.Length(ctx, m.Key)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, "INSERT INTO snapshots (stream, length, msg) VALUES ($1, $2, $3)", m.Key, n, m.ID)
	return err
}

// New builds the handler over pool.
func New(pool *pgxpool.Pool) consumer.Handler {
	return postgres.HandlerFunc(newHandler(eventlog.New(pool)).handle)
}
