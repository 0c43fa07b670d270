package main

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oncely/oncely/store/postgres"
)

func runMigrate(ctx context.Context, a *app, args []string) error {
	fs := a.flags("migrate", "oncely migrate --database-url URL [--schema oncely]", `
Creates the schema and the oncely tables (the idempotency claims) in Postgres,
or upgrades them to this build's version. Safe to run again and from several
processes at once.`)
	dbURL := fs.String("database-url", "", "Postgres connection string (default $DATABASE_URL)")
	schema := fs.String("schema", postgres.SchemaDefault, "schema holding the oncely tables")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *dbURL == "" {
		*dbURL = a.getenv("DATABASE_URL")
	}
	if *dbURL == "" {
		return usagef("migrate needs --database-url or DATABASE_URL, e.g. postgres://postgres@127.0.0.1:5432/app?sslmode=disable")
	}
	if err := postgres.ValidateSchema(*schema); err != nil {
		return usagef("migrate: --schema: %v", err)
	}
	pool, err := pgxpool.New(ctx, *dbURL)
	if err != nil {
		return fmt.Errorf("migrate: --database-url: %w", err)
	}
	defer pool.Close()
	before, err := postgres.Version(ctx, pool, *schema)
	if err != nil {
		return fmt.Errorf("migrate: reading the current version (is Postgres reachable at --database-url?): %w", err)
	}
	if err := postgres.Migrate(ctx, pool, *schema); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	after, err := postgres.Version(ctx, pool, *schema)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if before == after {
		fmt.Fprintf(a.stdout, "schema %s is up to date (version %d)\n", *schema, after)
		return nil
	}
	fmt.Fprintf(a.stdout, "schema %s migrated from version %d to %d\n", *schema, before, after)
	return nil
}
