// Package gapbugrepostmt is a corpus handler package with a bug (see
// vet/corpus_test.go): the handler adds metered units through a
// repository of another package, whose Add writes through the pool it
// holds (in an unexported helper), outside the claim's transaction. The
// report is on the handler's call and names the repository's statement
// (TestRemoteStatementNamed).
package gapbugrepostmt

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
	return h.meters.Add(ctx, m.Key, 1) // want `meters.Add runs statements outside the claim's transaction`
}

// New returns the metering handler behind the Postgres claim.
func New(r *meters.Repo) consumer.Handler {
	return postgres.HandlerFunc((&metering{meters: r}).handle)
}
