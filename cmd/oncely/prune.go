package main

import (
	"context"
	"fmt"

	"github.com/oncely/oncely/store/postgres"
)

func runPrune(ctx context.Context, a *app, args []string) error {
	fs := a.flags("prune", "oncely prune --database-url URL [--schema oncely] [--retention 168h]", `
Deletes idempotency claims older than the retention window, in small batches.
A Postgres store prunes by itself in the background unless its Config sets
NoPruning; this command is for stores that opted out, and for operators who
want a table trimmed now. A message delivered again after its claim was
pruned runs its handler again: keep the retention longer than the longest
retry delay plus the time a dead letter may wait before it is redriven.`)
	db := databaseFlags(fs)
	retention := fs.Duration("retention", postgres.RetentionDefault, "delete claims older than this")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *retention <= 0 {
		return usagef("prune: --retention must be positive, got %s", *retention)
	}
	pool, err := db.open(ctx, a, "prune")
	if err != nil {
		return err
	}
	defer pool.Close()
	st, err := postgres.New(pool, postgres.Config{Schema: *db.schema, Retention: *retention, NoPruning: true})
	if err != nil {
		return fmt.Errorf("prune: %w", err)
	}
	defer st.Close(ctx)
	n, err := st.Prune(ctx)
	if err != nil {
		return fmt.Errorf("prune: %w", err)
	}
	fmt.Fprintf(a.stdout, "deleted %d claims older than %s from schema %s\n", n, *retention, *db.schema)
	return nil
}
