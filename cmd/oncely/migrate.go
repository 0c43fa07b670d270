package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oncely/oncely/store/postgres"
)

func runMigrate(ctx context.Context, a *app, args []string) error {
	fs := a.flags("migrate", "oncely migrate --database-url URL [--schema oncely]", `
Creates the schema and the oncely tables (the idempotency claims) in Postgres,
or upgrades them to this build's version. Safe to run again and from several
processes at once.`)
	db := databaseFlags(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	pool, err := db.open(ctx, a, "migrate")
	if err != nil {
		return err
	}
	defer pool.Close()
	schema := db.schema
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

// dbFlags are the --database-url and --schema flags of the commands that
// work on the oncely tables.
type dbFlags struct{ url, schema *string }

func databaseFlags(fs *flag.FlagSet) dbFlags {
	return dbFlags{
		url:    fs.String("database-url", "", "Postgres connection string (default $DATABASE_URL)"),
		schema: fs.String("schema", postgres.SchemaDefault, "schema holding the oncely tables"),
	}
}

// open checks the flags and opens a pool; cmd names the command in errors.
func (f dbFlags) open(ctx context.Context, a *app, cmd string) (*pgxpool.Pool, error) {
	if *f.url == "" {
		*f.url = a.getenv("DATABASE_URL")
	}
	if *f.url == "" {
		return nil, usagef("%s needs --database-url or DATABASE_URL, e.g. postgres://postgres@127.0.0.1:5432/app?sslmode=disable", cmd)
	}
	if err := postgres.ValidateSchema(*f.schema); err != nil {
		return nil, usagef("%s: --schema: %v", cmd, err)
	}
	pool, err := pgxpool.New(ctx, *f.url)
	if err != nil {
		return nil, fmt.Errorf("%s: --database-url: %w", cmd, err)
	}
	return pool, nil
}
