package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	pgstore "github.com/oncely/oncely/store/postgres"
)

// unusedPool is a pool that never connects (pgxpool connects lazily).
func unusedPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), "postgres://nobody@127.0.0.1:1/none?connect_timeout=1")
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool
}

func TestConfigDefaults(t *testing.T) {
	s, err := pgstore.New(unusedPool(t), pgstore.Config{})
	closeAtEnd(t, s)
	require.NoError(t, err)
	cfg := s.Config()
	require.Equal(t, pgstore.SchemaDefault, cfg.Schema)
	require.Equal(t, pgstore.RetentionDefault, cfg.Retention)
	require.Equal(t, pgstore.PruneBatchSizeDefault, cfg.PruneBatchSize)
	require.Equal(t, 1, cfg.BatchSize, "single-message mode by default")
	require.Equal(t, pgstore.BatchLingerDefault, cfg.BatchLinger)
	require.NotNil(t, cfg.Logger)
	require.NoError(t, s.Close(context.Background()))
}

func TestConfigValidation(t *testing.T) {
	_, err := pgstore.New(nil, pgstore.Config{})
	require.Error(t, err)

	_, err = pgstore.New(unusedPool(t), pgstore.Config{
		Schema:         `oncely"; DROP TABLE x; --`,
		Retention:      time.Hour,
		MinRetention:   2 * time.Hour,
		PruneBatchSize: -1,
		BatchSize:      -2,
		BatchLinger:    -time.Second,
	})
	require.Error(t, err)
	for _, want := range []string{"schema", "Retention (1h0m0s) must exceed", "PruneBatchSize", "BatchSize", "BatchLinger"} {
		require.ErrorContains(t, err, want)
	}

	for _, bad := range []string{"Oncely", "1abc", "a-b", "a b", "", "x234567890123456789012345678901234567890123456789012345678901234"} {
		require.Error(t, pgstore.ValidateSchema(bad), bad)
	}
	for _, good := range []string{"oncely", "_x", "t_1", "select"} {
		require.NoError(t, pgstore.ValidateSchema(good), good)
	}
}

func TestValidateRetention(t *testing.T) {
	s, err := pgstore.New(unusedPool(t), pgstore.Config{Retention: 24 * time.Hour})
	closeAtEnd(t, s)
	require.NoError(t, err)
	require.NoError(t, s.ValidateRetention(23*time.Hour))
	err = s.ValidateRetention(36 * time.Hour)
	require.ErrorContains(t, err, "Retention (24h0m0s) must exceed the longest retry delay")
	require.Error(t, s.ValidateRetention(24*time.Hour), "equal is not enough")

	_, err = pgstore.New(unusedPool(t), pgstore.Config{Retention: 24 * time.Hour, MinRetention: 25 * time.Hour})
	require.ErrorContains(t, err, "must exceed")
	s, err = pgstore.New(unusedPool(t), pgstore.Config{Retention: 24 * time.Hour, MinRetention: 23 * time.Hour})
	closeAtEnd(t, s)
	require.NoError(t, err)
}

func TestIsConnectionError(t *testing.T) {
	require.False(t, pgstore.IsConnectionError(nil))
	require.False(t, pgstore.IsConnectionError(errors.New("x")))
	require.False(t, pgstore.IsConnectionError(fmt.Errorf("wrapped: %w", context.DeadlineExceeded)), "a deadline is the caller's, not an outage")
	require.False(t, pgstore.IsConnectionError(context.Canceled))
	require.False(t, pgstore.IsConnectionError(&pgconn.PgError{Code: "23505"}))
	require.False(t, pgstore.IsConnectionError(&pgconn.PgError{Code: "40P01"}))
	for _, code := range []string{"08000", "08006", "57P01", "57P02", "57P03", "53300"} {
		require.True(t, pgstore.IsConnectionError(fmt.Errorf("x: %w", &pgconn.PgError{Code: code})), code)
	}
	require.True(t, pgstore.IsConnectionError(fmt.Errorf("read: %w", io.ErrUnexpectedEOF)))
	require.True(t, pgstore.IsConnectionError(&net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}))
	require.True(t, pgstore.IsConnectionError(syscall.ECONNRESET))
}

func ExampleNew() {
	pool, _ := pgxpool.New(context.Background(), "postgres://127.0.0.1/app") // connects lazily
	defer pool.Close()
	_, err := pgstore.New(pool, pgstore.Config{Schema: "Payments", BatchSize: -1})
	fmt.Println(err)
	// Output:
	// postgres store: invalid config: schema "Payments" is not a valid name: it must match ^[a-z_][a-z0-9_]{0,62}$
	// BatchSize must be >= 1 (1 = single-message mode), got -1
}

func ExampleStore_ValidateRetention() {
	pool, _ := pgxpool.New(context.Background(), "postgres://127.0.0.1/app")
	defer pool.Close()
	s, _ := pgstore.New(pool, pgstore.Config{Retention: 24 * time.Hour})
	defer s.Close(context.Background())
	// The longest broker retry delay (say 6h) plus a DLQ replay within 2 days.
	fmt.Println(s.ValidateRetention(6*time.Hour + 48*time.Hour))
	// Output:
	// postgres store: retention window too short: Retention (24h0m0s) must exceed the longest retry delay plus the expected dead-letter replay delay (54h0m0s), or a copy delivered after its claim is pruned runs the handler again
}
