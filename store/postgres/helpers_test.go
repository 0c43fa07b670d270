package postgres_test

import (
	"context"
	"errors"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/oncely/oncely/internal/pgtest"
	"github.com/oncely/oncely/internal/proxytest"
	pgstore "github.com/oncely/oncely/store/postgres"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// errBoom is a handler failure.
var errBoom = errors.New("boom")

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// newStore opens a migrated schema with an effects table (no unique
// constraint, so a duplicated effect shows as a second row) and a Store on it.
func newStore(t testing.TB, db *pgtest.DB, cfg pgstore.Config) *pgstore.Store {
	t.Helper()
	cfg.Schema = db.Schema
	if cfg.Logger == nil {
		cfg.Logger = quiet // expected failures log warnings
	}
	s, err := pgstore.New(db.Pool, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close(context.Background())) })
	return s
}

func createEffects(t testing.TB, db *pgtest.DB) {
	t.Helper()
	_, err := db.Pool.Exec(ctxT(t), `CREATE TABLE effects (id text NOT NULL, txid bigint NOT NULL DEFAULT txid_current(), at timestamptz NOT NULL DEFAULT clock_timestamp())`)
	require.NoError(t, err)
}

// effect inserts one effect row for id in the store's transaction.
func effect(id string) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		tx, ok := pgstore.Tx(ctx)
		if !ok {
			return errors.New("no tx in context")
		}
		_, err := tx.Exec(ctx, "INSERT INTO effects (id) VALUES ($1)", id)
		return err
	}
}

func countEffects(t testing.TB, db *pgtest.DB, id string) int {
	t.Helper()
	var n int
	require.NoError(t, db.Pool.QueryRow(ctxT(t), "SELECT count(*) FROM effects WHERE id = $1", id).Scan(&n))
	return n
}

func effectCounts(t testing.TB, db *pgtest.DB) map[string]int {
	t.Helper()
	rows, err := db.Pool.Query(ctxT(t), "SELECT id, count(*) FROM effects GROUP BY id")
	require.NoError(t, err)
	m, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (struct {
		id string
		n  int
	}, error) {
		var v struct {
			id string
			n  int
		}
		err := r.Scan(&v.id, &v.n)
		return v, err
	})
	require.NoError(t, err)
	out := make(map[string]int, len(m))
	for _, v := range m {
		out[v.id] = v.n
	}
	return out
}

func claimed(t testing.TB, db *pgtest.DB, consumerName, id string) bool {
	t.Helper()
	var ok bool
	require.NoError(t, db.Pool.QueryRow(ctxT(t),
		"SELECT EXISTS (SELECT 1 FROM processed_messages WHERE consumer = $1 AND message_id = $2)", consumerName, id).Scan(&ok))
	return ok
}

// proxied starts a proxytest.Proxy in front of the test's server and opens a pool
// that dials through it.
func proxied(t testing.TB, db *pgtest.DB, maxConns int32) (*proxytest.Proxy, *pgxpool.Pool) {
	t.Helper()
	cfg := db.Config(t)
	p, err := proxytest.New(net.JoinHostPort(cfg.ConnConfig.Host, strconv.Itoa(int(cfg.ConnConfig.Port))))
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	host, port, err := net.SplitHostPort(p.Addr())
	require.NoError(t, err)
	pn, err := strconv.Atoi(port)
	require.NoError(t, err)
	pool := db.NewPool(t, func(c *pgxpool.Config) {
		c.ConnConfig.Host = host
		c.ConnConfig.Port = uint16(pn)
		c.ConnConfig.Fallbacks = nil
		c.ConnConfig.ConnectTimeout = 2 * time.Second
		c.MaxConns = maxConns
		c.HealthCheckPeriod = 100 * time.Millisecond
	})
	return p, pool
}

// closeAtEnd closes s (which stops its background pruner) when the test
// ends; a nil s (New failed) is ignored.
func closeAtEnd(t testing.TB, s *pgstore.Store) {
	if s != nil {
		t.Cleanup(func() { _ = s.Close(context.Background()) })
	}
}
