// Package pgtest gives each test its own migrated PostgreSQL schema and a
// pgxpool, from internal/envtest.Postgres (TEST_DATABASE_URL), and drops the
// schema when the test ends.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oncely/oncely/internal/envtest"
	pgstore "github.com/oncely/oncely/store/postgres"
)

// MaxConnsDefault is the pool size New gives a test unless Options say
// otherwise. The server is shared by parallel tests, so keep it small.
const MaxConnsDefault = 8

// Options tune New. The zero value is valid.
type Options struct {
	// MaxConns is the pool's size. Defaults to MaxConnsDefault.
	MaxConns int32
	// NoMigrate creates the schema empty instead of running
	// store/postgres.Migrate.
	NoMigrate bool
}

// DB is one test's schema and pool.
type DB struct {
	// URL is the server's connection string.
	URL string
	// Schema is the test's own schema, migrated unless Options.NoMigrate.
	Schema string
	// Pool connects to URL with Schema first on the search_path and the
	// schema as application_name; it is closed when the test ends.
	Pool *pgxpool.Pool
}

var unsafeChars = regexp.MustCompile(`[^a-z0-9_]+`)

// New creates a schema named after t with a random suffix, migrates it and
// opens a pool on it. Cleanup closes the pool and drops the schema. Without a
// reachable server the test is skipped (or fails under CI=true).
func New(t testing.TB, opts ...Options) *DB {
	t.Helper()
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	if o.MaxConns == 0 {
		o.MaxConns = MaxConnsDefault
	}
	url := envtest.Postgres(t)
	schema := SchemaName(t.Name())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	admin, err := pgx.Connect(ctx, url)
	if err != nil {
		envtest.Missing(t, "PostgreSQL", err)
		return nil
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize()); err != nil {
		t.Fatalf("pgtest: create schema %s: %v", schema, err)
	}
	t.Cleanup(func() { drop(t, url, schema) })

	db := &DB{URL: url, Schema: schema}
	db.Pool = db.NewPool(t, func(c *pgxpool.Config) { c.MaxConns = o.MaxConns })
	if !o.NoMigrate {
		if err := pgstore.Migrate(ctx, db.Pool, schema); err != nil {
			t.Fatalf("pgtest: migrate %s: %v", schema, err)
		}
	}
	return db
}

// Config returns a pool config for the test's schema: URL, search_path set to
// Schema, application_name set to Schema (to find the test's sessions in
// pg_stat_activity), MaxConns MaxConnsDefault.
func (db *DB) Config(t testing.TB) *pgxpool.Config {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(db.URL)
	if err != nil {
		t.Fatalf("pgtest: parse %s: %v", db.URL, err)
	}
	cfg.MaxConns = MaxConnsDefault
	cfg.ConnConfig.RuntimeParams["search_path"] = db.Schema
	cfg.ConnConfig.RuntimeParams["application_name"] = db.Schema
	return cfg
}

// NewPool opens another pool on the test's schema, after configure (if not
// nil) adjusted its Config (for example to dial through a proxytest.Proxy: set
// ConnConfig.Host and ConnConfig.Port). The pool is closed when the test ends.
func (db *DB) NewPool(t testing.TB, configure func(*pgxpool.Config)) *pgxpool.Pool {
	t.Helper()
	cfg := db.Config(t)
	if configure != nil {
		configure(cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatalf("pgtest: pool: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// SchemaName turns a test name into a unique schema name: lower case, only
// [a-z0-9_], at most 63 bytes including a random suffix.
func SchemaName(testName string) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	base := unsafeChars.ReplaceAllString(strings.ToLower(testName), "_")
	base = strings.Trim(base, "_")
	if len(base) > 48 {
		base = base[:48]
	}
	return "t_" + base + "_" + hex.EncodeToString(b[:])
}

func drop(t testing.TB, url, schema string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Logf("pgtest: schema %s left behind: %v", schema, err)
		return
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
		t.Logf("pgtest: drop schema %s: %v", schema, err)
	}
}
