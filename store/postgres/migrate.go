package postgres

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// schemaPlaceholder is replaced in migration files by the quoted schema name.
const schemaPlaceholder = "{{schema}}"

// Migration is one embedded schema change.
type Migration struct {
	// Version is the file's number prefix, 1, 2, … without gaps.
	Version int
	// Name is the file name, e.g. "0001_processed_messages.sql".
	Name string
	// SQL is the file's text, with {{schema}} standing for the schema.
	SQL string
}

// Migrations returns the embedded migrations in version order. It fails if a
// file name lacks a number prefix or the versions are not 1..n without gaps.
func Migrations() ([]Migration, error) {
	return loadMigrations(migrationFS, "migrations")
}

func loadMigrations(fsys fs.FS, dir string) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, err
	}
	var ms []Migration
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".sql") {
			continue
		}
		num, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v < 1 {
			return nil, fmt.Errorf("migration %s: name must start with a version number and an underscore", e.Name())
		}
		b, err := fs.ReadFile(fsys, path.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		ms = append(ms, Migration{Version: v, Name: e.Name(), SQL: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].Version < ms[j].Version })
	for i, m := range ms {
		if m.Version != i+1 {
			return nil, fmt.Errorf("migration %s: version %d, want %d (versions must be 1..n without gaps or repeats)", m.Name, m.Version, i+1)
		}
	}
	return ms, nil
}

// Migrate creates schema if needed and applies every embedded migration not
// yet recorded in <schema>.schema_migrations, all in one transaction. Applying
// twice is a no-op. Concurrent calls for the same schema are serialised by a
// transaction-level advisory lock, so they are safe from several processes.
// schema is validated like Config.Schema; "" means SchemaDefault.
func Migrate(ctx context.Context, pool *pgxpool.Pool, schema string) error {
	ms, err := Migrations()
	if err != nil {
		return err
	}
	return migrate(ctx, pool, schema, ms)
}

func migrate(ctx context.Context, pool *pgxpool.Pool, schema string, ms []Migration) error {
	if schema == "" {
		schema = SchemaDefault
	}
	if err := ValidateSchema(schema); err != nil {
		return fmt.Errorf("postgres store: migrate: %w", err)
	}
	quoted := pgx.Identifier{schema}.Sanitize()
	table := pgx.Identifier{schema, MigrationsTable}.Sanitize()

	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", "oncely.migrate:"+schema); err != nil {
			return fmt.Errorf("postgres store: migrate: lock: %w", err)
		}
		if _, err := tx.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+quoted); err != nil {
			return fmt.Errorf("postgres store: migrate: create schema: %w", err)
		}
		if _, err := tx.Exec(ctx, "CREATE TABLE IF NOT EXISTS "+table+
			" (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())"); err != nil {
			return fmt.Errorf("postgres store: migrate: create %s: %w", MigrationsTable, err)
		}
		var current int
		if err := tx.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM "+table).Scan(&current); err != nil {
			return fmt.Errorf("postgres store: migrate: read version: %w", err)
		}
		if current > len(ms) {
			return fmt.Errorf("postgres store: migrate: schema %s is at version %d, newer than this build knows (%d)", schema, current, len(ms))
		}
		for _, m := range ms[current:] {
			if _, err := tx.Exec(ctx, strings.ReplaceAll(m.SQL, schemaPlaceholder, quoted)); err != nil {
				return fmt.Errorf("postgres store: migrate: %s: %w", m.Name, err)
			}
			if _, err := tx.Exec(ctx, "INSERT INTO "+table+" (version, name) VALUES ($1, $2)", m.Version, m.Name); err != nil {
				return fmt.Errorf("postgres store: migrate: record %s: %w", m.Name, err)
			}
		}
		return nil
	})
}

// Version returns the highest migration version applied to schema, 0 when
// the schema or its migrations table does not exist.
func Version(ctx context.Context, pool *pgxpool.Pool, schema string) (int, error) {
	if schema == "" {
		schema = SchemaDefault
	}
	if err := ValidateSchema(schema); err != nil {
		return 0, err
	}
	var exists bool
	if err := pool.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", pgx.Identifier{schema, MigrationsTable}.Sanitize()).Scan(&exists); err != nil {
		return 0, err
	}
	if !exists {
		return 0, nil
	}
	var v int
	err := pool.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM "+pgx.Identifier{schema, MigrationsTable}.Sanitize()).Scan(&v)
	return v, err
}
