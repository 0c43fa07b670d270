package pgtest_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/oncely/oncely/internal/pgtest"
	pgstore "github.com/oncely/oncely/store/postgres"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestSchemaName(t *testing.T) {
	a := pgtest.SchemaName("TestX/Sub Case-1")
	b := pgtest.SchemaName("TestX/Sub Case-1")
	require.NotEqual(t, a, b, "a random suffix keeps parallel runs apart")
	require.True(t, strings.HasPrefix(a, "t_testx_sub_case_1_"), a)
	require.NoError(t, pgstore.ValidateSchema(a))
	long := pgtest.SchemaName(strings.Repeat("VeryLongTestName", 10))
	require.LessOrEqual(t, len(long), 63)
	require.NoError(t, pgstore.ValidateSchema(long))
}

func TestNewGivesAMigratedSchemaAndDropsIt(t *testing.T) {
	var schema, url string
	t.Run("inner", func(t *testing.T) {
		db := pgtest.New(t)
		schema, url = db.Schema, db.URL
		ctx := context.Background()
		v, err := pgstore.Version(ctx, db.Pool, db.Schema)
		require.NoError(t, err)
		require.Positive(t, v)
		var sp string
		require.NoError(t, db.Pool.QueryRow(ctx, "SHOW search_path").Scan(&sp))
		require.Equal(t, db.Schema, sp)
	})
	if url == "" {
		return // the subtest could not reach PostgreSQL: it failed (CI=true) or skipped
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	var exists bool
	require.NoError(t, conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)", schema).Scan(&exists))
	require.False(t, exists, "the schema is dropped when the test ends")
}
