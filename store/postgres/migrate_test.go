package postgres_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/internal/pgtest"
	pgstore "github.com/oncely/oncely/store/postgres"
)

func TestMigrationsAreNumbered(t *testing.T) {
	ms, err := pgstore.Migrations()
	require.NoError(t, err)
	require.NotEmpty(t, ms)
	for i, m := range ms {
		require.Equal(t, i+1, m.Version)
		require.Contains(t, m.SQL, "{{schema}}")
	}
}

func TestMigrateTwiceIsNoOp(t *testing.T) {
	db := pgtest.New(t) // migrated once already
	ctx := ctxT(t)
	ms, err := pgstore.Migrations()
	require.NoError(t, err)
	require.NoError(t, pgstore.Migrate(ctx, db.Pool, db.Schema))

	v, err := pgstore.Version(ctx, db.Pool, db.Schema)
	require.NoError(t, err)
	require.Equal(t, len(ms), v)
	var rows int
	require.NoError(t, db.Pool.QueryRow(ctx, "SELECT count(*) FROM schema_migrations").Scan(&rows))
	require.Equal(t, len(ms), rows)

	// The claims table and its retention index exist.
	var idx int
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_indexes WHERE schemaname = $1
		AND tablename = 'processed_messages' AND indexdef LIKE '%(processed_at)%'`, db.Schema).Scan(&idx))
	require.Equal(t, 1, idx)

	// 0003: the console's audit table.
	var audit bool
	require.NoError(t, db.Pool.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", db.Schema+".console_audit").Scan(&audit))
	require.True(t, audit)
}

func TestMigrateConcurrently(t *testing.T) {
	db := pgtest.New(t, pgtest.Options{NoMigrate: true})
	ctx := ctxT(t)
	fresh := db.Schema + "_c" // does not exist yet: every caller races to create it
	t.Cleanup(func() { _, _ = db.Pool.Exec(ctxT(t), "DROP SCHEMA IF EXISTS "+fresh+" CASCADE") })

	v, err := pgstore.Version(ctx, db.Pool, fresh)
	require.NoError(t, err)
	require.Zero(t, v)

	var wg sync.WaitGroup
	errs := make([]error, 6)
	for i := range errs {
		wg.Go(func() { errs[i] = pgstore.Migrate(ctx, db.Pool, fresh) })
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	ms, _ := pgstore.Migrations()
	v, err = pgstore.Version(ctx, db.Pool, fresh)
	require.NoError(t, err)
	require.Equal(t, len(ms), v)
}

func TestMigrateRejectsBadSchema(t *testing.T) {
	db := pgtest.New(t, pgtest.Options{NoMigrate: true})
	err := pgstore.Migrate(ctxT(t), db.Pool, `x"; DROP SCHEMA public; --`)
	require.ErrorContains(t, err, "not a valid name")
	_, err = pgstore.Version(ctxT(t), db.Pool, "Bad")
	require.Error(t, err)
}
