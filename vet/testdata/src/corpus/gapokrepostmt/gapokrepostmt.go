// Package gapokrepostmt is a correct corpus handler package (see
// vet/corpus_test.go): the handler adds metered units through the
// repository of another package that gapbugrepostmt uses, with the
// method that writes in the claim's transaction it is given.
package gapokrepostmt

import (
	"context"

	"corpus/internal/meters"
	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type metering struct{ meters *meters.Repo }

func (h *metering) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	if _, err := tx.Exec(ctx, "INSERT INTO usage_events (id) VALUES ($1)", m.ID); err != nil {
		return err
	}
	return h.meters.AddTx(ctx, tx, m.Key, 1)
}

// New returns the metering handler behind the Postgres claim.
func New(r *meters.Repo) consumer.Handler {
	return postgres.HandlerFunc((&metering{meters: r}).handle)
}
