package postgres_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/pgtest"
	pgstore "github.com/oncely/oncely/store/postgres"
)

// probeCtx bounds one Probe as the runtime's ProbeTimeout would.
func probeCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// requireProbedDependency asserts that err is an *consumer.UnavailableError
// naming s as its Dependency, and returns what probing it says.
func requireProbedDependency(t *testing.T, s *pgstore.Store, err error) error {
	t.Helper()
	var ue *consumer.UnavailableError
	require.ErrorAs(t, err, &ue, "got %v", err)
	require.NotNil(t, ue.Dependency, "the store names itself as the dependency to probe")
	require.Equal(t, consumer.Prober(s), ue.Dependency)
	return ue.Dependency.Probe(probeCtx(t))
}

func TestProbe(t *testing.T) {
	t.Run("up", func(t *testing.T) {
		s := newStore(t, pgtest.New(t), pgstore.Config{})
		require.NoError(t, s.Probe(probeCtx(t)))
	})
	t.Run("closed", func(t *testing.T) {
		s := newStore(t, pgtest.New(t), pgstore.Config{})
		require.NoError(t, s.Close(context.Background()))
		require.ErrorIs(t, s.Probe(probeCtx(t)), pgstore.ErrClosed)
		_, err := s.Process(ctxT(t), "ledger", "m1", func(context.Context) error { return nil })
		require.ErrorIs(t, err, pgstore.ErrClosed)
		require.ErrorIs(t, requireProbedDependency(t, s, err), pgstore.ErrClosed, "a closed store holds deliveries")
	})
	t.Run("unreachable", func(t *testing.T) {
		db := pgtest.New(t)
		p, pool := proxied(t, db, 2)
		s, err := pgstore.New(pool, pgstore.Config{Schema: db.Schema})
		closeAtEnd(t, s)
		require.NoError(t, err)
		require.NoError(t, s.Probe(probeCtx(t)), "up through the proxy")
		require.NoError(t, p.Close()) // nothing listens any more; open connections are reset
		start := time.Now()
		err = s.Probe(probeCtx(t))
		require.Error(t, err)
		require.True(t, pgstore.IsConnectionError(err), "got %v", err)
		require.Less(t, time.Since(start), 5*time.Second)
	})
	// A server refusing new sessions (shutting down, starting up) fails the
	// probe although a pooled session still answers. Catches: a probe on a
	// pooled session, which during pg_ctl stop -m fast answered before the
	// server terminated it, so the outage was called the message's fault.
	t.Run("new sessions refused", func(t *testing.T) {
		db := pgtest.New(t)
		p, pool := proxied(t, db, 2)
		s, err := pgstore.New(pool, pgstore.Config{Schema: db.Schema})
		closeAtEnd(t, s)
		require.NoError(t, err)
		require.NoError(t, s.Probe(probeCtx(t)))
		require.NoError(t, pool.Ping(probeCtx(t)), "a pooled session stays open")
		p.Refuse()
		require.Error(t, s.Probe(probeCtx(t)))
		require.NoError(t, pool.Ping(probeCtx(t)), "the pooled session still answers")
		p.Accept()
		require.NoError(t, s.Probe(probeCtx(t)))
	})
	// A store operation that cannot open a connection is an outage whatever
	// a later probe says (consumer.DownFrom). Catches: a refused connection
	// whose database is back when the runtime probes being charged to the
	// message as an attempt.
	t.Run("refused connection is down", func(t *testing.T) {
		db := pgtest.New(t)
		p, pool := proxied(t, db, 2)
		s, err := pgstore.New(pool, pgstore.Config{Schema: db.Schema})
		closeAtEnd(t, s)
		require.NoError(t, err)
		p.Refuse()
		p.Cut()
		_, err = s.Process(ctxT(t), "ledger", "m1", func(context.Context) error { return nil })
		var ue *consumer.UnavailableError
		require.ErrorAs(t, err, &ue, "got %v", err)
		require.True(t, ue.Down, "a refused connection shows the database down: %v", err)
		require.Equal(t, consumer.Prober(s), ue.Dependency, "probed to learn when it is back")
	})
	t.Run("read-only", func(t *testing.T) {
		db := pgtest.New(t)
		pool := db.NewPool(t, func(c *pgxpool.Config) {
			c.ConnConfig.RuntimeParams["default_transaction_read_only"] = "on"
		})
		s, err := pgstore.New(pool, pgstore.Config{Schema: db.Schema})
		closeAtEnd(t, s)
		require.NoError(t, err)
		require.ErrorContains(t, s.Probe(probeCtx(t)), "read-only")
	})
	t.Run("no claims table", func(t *testing.T) {
		s := newStore(t, pgtest.New(t, pgtest.Options{NoMigrate: true}), pgstore.Config{})
		var pgErr *pgconn.PgError
		require.ErrorAs(t, s.Probe(probeCtx(t)), &pgErr)
		require.Equal(t, "42P01", pgErr.Code)
	})
}

// A handler whose connection the server kills while the database answers
// others gets an error naming the store as its Dependency, which probes up:
// the runtime then treats it as the message's failure, not an outage. Nothing
// is committed, and the message runs again.
func TestKilledHandlerConnectionIsProbedUp(t *testing.T) {
	// Each kill runs on the handler's goroutine (the store's, in batch
	// mode), so it returns its failure instead of calling t.FailNow.
	kills := map[string]func(ctx context.Context, db *pgtest.DB, tx pgx.Tx, pid uint32) error{
		"pg_terminate_backend": func(ctx context.Context, db *pgtest.DB, _ pgx.Tx, pid uint32) error {
			var ok bool
			if err := db.Pool.QueryRow(ctx, "SELECT pg_terminate_backend($1, 10000)", int64(pid)).Scan(&ok); err != nil {
				return err
			}
			if !ok {
				return errors.New("the backend did not end within 10s")
			}
			return nil
		},
		"idle_in_transaction_session_timeout": func(ctx context.Context, db *pgtest.DB, tx pgx.Tx, pid uint32) error {
			if _, err := tx.Exec(ctx, "SET LOCAL idle_in_transaction_session_timeout = '50ms'"); err != nil {
				return err
			}
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				var n int
				if err := db.Pool.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE pid = $1", int64(pid)).Scan(&n); err != nil {
					return err
				}
				if n == 0 {
					return nil
				}
			}
			return errors.New("the server did not end the idle transaction's session within 10s")
		},
	}
	modes := map[string]pgstore.Config{
		"single": {},
		"batch":  {BatchSize: 4, BatchLinger: time.Millisecond},
	}
	for mode, cfg := range modes {
		for name, kill := range kills {
			t.Run(mode+"/"+name, func(t *testing.T) {
				db := pgtest.New(t)
				createEffects(t, db)
				s := newStore(t, db, cfg)
				ctx := ctxT(t)
				var runs atomic.Int32
				var killErr error
				_, err := s.Process(ctx, "ledger", "m1", func(ctx context.Context) error {
					runs.Add(1)
					if err := effect("m1")(ctx); err != nil {
						return err
					}
					tx, _ := pgstore.Tx(ctx)
					if killErr = kill(ctx, db, tx, tx.Conn().PgConn().PID()); killErr != nil {
						return killErr
					}
					_, err := tx.Exec(ctx, "INSERT INTO effects (id) VALUES ('m1-after')")
					return err
				})
				require.NoError(t, killErr)
				require.Error(t, err)
				require.NoError(t, requireProbedDependency(t, s, err), "the database answers others")
				require.Equal(t, 0, countEffects(t, db, "m1"))
				require.False(t, claimed(t, db, "ledger", "m1"), "no claim committed")

				dup, err := s.Process(ctx, "ledger", "m1", func(ctx context.Context) error {
					runs.Add(1)
					return effect("m1")(ctx)
				})
				require.NoError(t, err)
				require.False(t, dup)
				require.EqualValues(t, 2, runs.Load(), "the second Process runs fn again")
				require.Equal(t, 1, countEffects(t, db, "m1"))
				require.True(t, claimed(t, db, "ledger", "m1"))
			})
		}
	}
}
