package outbox_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/internal/envtest"
	"github.com/oncely/oncely/internal/pgtest"
	"github.com/oncely/oncely/outbox"
	"github.com/oncely/oncely/store/postgres"
)

// TestChannelFitsEverySchema: for every valid schema length the channel name
// fits Postgres's 63-byte identifier limit, stays as it was for short
// schemas, and differs between schemas that share their first 62 bytes.
func TestChannelFitsEverySchema(t *testing.T) {
	seen := map[string]string{}
	for n := 1; n <= 63; n++ {
		for _, last := range []string{"a", "b"} {
			schema := strings.Repeat("s", n-1) + last
			require.NoError(t, postgres.ValidateSchema(schema))
			ch := outbox.Channel(schema)
			require.LessOrEqual(t, len(ch), 63, "schema of %d bytes", n)
			if other, ok := seen[ch]; ok {
				t.Fatalf("schemas %q and %q share channel %q", other, schema, ch)
			}
			seen[ch] = schema
		}
	}
	require.Equal(t, "oncely_outbox.oncely", outbox.Channel("oncely"))
}

// TestLongSchemaSendsAndWakes: with a 63-byte schema, Send commits and its
// notification wakes a relay that would otherwise poll only hourly.
func TestLongSchemaSendsAndWakes(t *testing.T) {
	db := longSchemaDB(t)
	require.Len(t, db.Schema, 63)
	b := memBroker(t)
	s := sender(t, db)
	r := newRelay(t, db, b, outbox.Config{PollInterval: time.Hour, Workers: 1})
	listening := make(chan struct{}, 1)
	r.SetListening(func() { listening <- struct{}{} })
	startRelay(t, r)
	select {
	case <-listening:
	case <-time.After(30 * time.Second):
		t.Fatal("relay never listened")
	}
	// The relay's first round after LISTEN found nothing; only the
	// notification can wake it now.
	sendTx(t, db, s, "orders", msg("long-1", "k", "1"))
	b.waitDistinct(t, 1)
	waitUnpublished(t, db, 0)
}

// longSchemaDB is pgtest.New with a schema name of exactly 63 bytes.
func longSchemaDB(t *testing.T) *pgtest.DB {
	t.Helper()
	url := envtest.Postgres(t)
	base := pgtest.SchemaName(t.Name())
	db := &pgtest.DB{URL: url, Schema: base + strings.Repeat("x", 63-len(base))}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin, err := pgx.Connect(ctx, url)
	if err != nil {
		envtest.Missing(t, "PostgreSQL", err)
		return nil
	}
	defer admin.Close(ctx)
	quoted := pgx.Identifier{db.Schema}.Sanitize()
	_, err = admin.Exec(ctx, "CREATE SCHEMA "+quoted)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if conn, err := pgx.Connect(ctx, url); err == nil {
			_, _ = conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+quoted+" CASCADE")
			_ = conn.Close(ctx)
		}
	})
	db.Pool = db.NewPool(t, nil)
	require.NoError(t, postgres.Migrate(ctx, db.Pool, db.Schema))
	return db
}
