package main

import (
	"context"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/internal/pgtest"
	"github.com/oncely/oncely/store/postgres"
)

// TestReplicasStartTogether: five instances creating the ledger's tables
// and migrating the store at the same moment, against a fresh schema, all
// succeed (a Deployment with replicas starts them so). Catches: a bare
// CREATE TABLE IF NOT EXISTS, which fails with a duplicate key in pg_type
// when it races itself.
func TestReplicasStartTogether(t *testing.T) {
	for round := range 3 {
		db := pgtest.New(t, pgtest.Options{NoMigrate: true, MaxConns: 10})
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		start := make(chan struct{})
		errs := make(chan error, 10)
		var wg sync.WaitGroup
		for range 5 {
			wg.Go(func() {
				<-start
				errs <- createTables(ctx, db.Pool)
				errs <- postgres.Migrate(ctx, db.Pool, db.Schema)
			})
		}
		close(start)
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err, "round %d", round)
		}
	}
}

// TestRetentionOutlivesRetries: a retry policy whose longest retry (plus a
// day to replay dead letters) outlives the claims' retention is refused at
// start, before any message is consumed. Catches: a ledger that starts with
// claims pruned before a retried copy comes back, which would apply that
// payment twice.
func TestRetentionOutlivesRetries(t *testing.T) {
	e := newLedgerEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg := config{brokerURL: e.broker, databaseURL: e.dbURL, dedupe: true, concurrency: 4, source: "payments", consumer: consumerName,
		schema: e.schema, maxAttempts: 3, retryDelay: 24 * time.Hour} // retries of up to 10 days > 7 days' retention
	err := serve(ctx, cfg, slog.New(slog.DiscardHandler))
	require.ErrorContains(t, err, "retention")
	require.NoError(t, ctx.Err(), "refused at start, not at the deadline")
}

// TestOpsAddressInUse: an ops address that cannot be bound ends serve at
// once with the bind error, before any message is consumed. Catches: health
// and metrics endpoints served from a goroutine that drops the bind error,
// so the ledger runs on without them and reports a clean stop.
func TestOpsAddressInUse(t *testing.T) {
	e := newLedgerEnv(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg := config{brokerURL: e.broker, databaseURL: e.dbURL, dedupe: true, concurrency: 4, source: "payments", consumer: consumerName,
		schema: e.schema, maxAttempts: 3, retryDelay: 50 * time.Millisecond, addr: ln.Addr().String()}
	err = serve(ctx, cfg, slog.New(slog.DiscardHandler))
	require.ErrorContains(t, err, "address already in use")
	require.NoError(t, ctx.Err(), "refused at start, not at the deadline")
}
