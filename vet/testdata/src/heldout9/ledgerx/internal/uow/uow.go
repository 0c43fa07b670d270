// Package uow groups the ledger's tables into one unit of work.
package uow

import (
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"heldout9/ledgerx/internal/repo"
)

// Entry is one ledger entry.
type Entry struct {
	ID      string
	Account string
	Amount  int64
}

// Key returns the entry's ID.
func (e Entry) Key() string { return e.ID }

// Tables is the set of tables one handler writes.
type Tables struct {
	Entries *repo.Table[Entry]
}

// New returns the tables over pool, for reads and for the admin API.
func New(pool *pgxpool.Pool) *Tables {
	return &Tables{Entries: repo.NewTable[Entry](pool,
		`INSERT INTO entries (id, account, amount) VALUES ($1, $2, $3)`,
		`SELECT EXISTS (SELECT 1 FROM entries WHERE id = $1)`,
		func(e Entry) []any { return []any{e.ID, e.Account, e.Amount} })}
}

// In returns the same tables bound to tx: the unit of work of one handler run.
func (t *Tables) In(tx pgx.Tx) *Tables {
	return &Tables{Entries: t.Entries.WithTx(tx)}
}
