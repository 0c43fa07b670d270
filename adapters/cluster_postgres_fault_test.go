//go:build faults

package adapters_test

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/adapters/memory"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/outbox"
	"github.com/oncely/oncely/retry"
	pgstore "github.com/oncely/oncely/store/postgres"
)

// Every pgRetryEvery-th message fails its first attempt (a retry copy),
// every pgPoisonEvery-th fails for good (a dead letter, no effect).
const (
	pgRetryEvery  = 40
	pgPoisonEvery = 97
)

func pgPoison(i int) bool  { return i%pgPoisonEvery == pgPoisonEvery-1 }
func pgRetried(i int) bool { return i%pgRetryEvery == 7 }

// TestFaultPostgresClusterPromotion: the store, the effects and the outbox
// live on a primary with a synchronous streaming standby (scripts/cluster.sh
// start postgres), reached through one multi-host DSN with
// target_session_attrs=read-write; the broker (memory) stays up. Mid-run the
// primary is killed and the standby promoted. Every message's effect commits
// once, per key in publish order, the poison messages are dead-lettered and
// nothing else, every outbox row is relayed, and the killed node, restarted,
// rejoins as a standby: the DSN never reaches it for writes.
func TestFaultPostgresClusterPromotion(t *testing.T) {
	url := clusterVar(t, "PG_CLUSTER_URL", "postgres")
	nodes := clusterVar(t, "PG_CLUSTER_NODES", "postgres")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	primary, standby := pgRoles(t, ctx, nodes)
	cfg, err := pgxpool.ParseConfig(url)
	require.NoError(t, err)
	cfg.MaxConns = 12
	cfg.ConnConfig.ConnectTimeout = 2 * time.Second
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	var syncState string
	require.NoError(t, pool.QueryRow(ctx, "SELECT coalesce(max(sync_state), 'none') FROM pg_stat_replication").Scan(&syncState))
	require.Equal(t, "sync", syncState, "the standby replicates synchronously: an asynchronous one may miss a commit the primary acked")

	schema := fmt.Sprintf("promo%d", time.Now().UnixNano())
	require.NoError(t, pgstore.Migrate(ctx, pool, schema))
	effects := pgx.Identifier{schema, "effects"}.Sanitize()
	_, err = pool.Exec(ctx, "CREATE TABLE "+effects+" (id text PRIMARY KEY, key text NOT NULL, seq int NOT NULL, n int NOT NULL DEFAULT 1, ord bigserial)")
	require.NoError(t, err)
	st, err := pgstore.New(pool, pgstore.Config{Schema: schema, Logger: quietLog, NoPruning: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close(context.Background()) })
	sender, err := outbox.NewSender(schema)
	require.NoError(t, err)

	mb := memory.NewBroker()
	b, err := adapters.Open(ctx, "mem://", adapters.WithMemoryBroker(mb), adapters.WithLogger(quietLog))
	require.NoError(t, err)
	defer func() { _ = b.Close() }()
	relay, err := outbox.NewRelay(pool, b, outbox.Config{Schema: schema, PollInterval: 100 * time.Millisecond, Logger: quietLog})
	require.NoError(t, err)
	relayCtx, stopRelay := context.WithCancel(ctx)
	relayDone := make(chan error, 1)
	go func() { relayDone <- relay.Run(relayCtx) }()
	defer func() { stopRelay(); <-relayDone }()

	h := pgstore.HandlerFunc(func(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
		seq, err := strconv.Atoi(string(msg.Body))
		if err != nil {
			return err
		}
		if pgPoison(seq) {
			return consumer.Permanent(errors.New("poison"))
		}
		if pgRetried(seq) && msg.Attempt == 1 {
			return errors.New("first attempt fails")
		}
		if _, err := tx.Exec(ctx, "INSERT INTO "+effects+" (id, key, seq) VALUES ($1, $2, $3) ON CONFLICT (id) DO UPDATE SET n = "+effects+".n + 1", msg.ID, msg.Key, seq); err != nil {
			return err
		}
		return sender.Send(ctx, tx, "receipts", &consumer.Message{ID: "r-" + msg.ID, Key: msg.Key, Body: msg.Body})
	})
	var (
		processed atomic.Int64
		killNow   = make(chan struct{}, 1)
		resumedAt atomic.Pointer[time.Time]
		breakers  atomic.Int64
		closedAt  atomic.Pointer[time.Time] // the breaker's last close
		retried   atomic.Int64
	)
	obs := &matrixObserver{settled: func(ev consumer.Event) {
		if ev.Outcome == consumer.OutcomeRetried {
			retried.Add(1)
		}
		if ev.Outcome != consumer.OutcomeProcessed {
			return
		}
		if processed.Add(1) == clusterKillAt {
			killNow <- struct{}{}
		}
		// Progress resumed: the first effect committed after the outage
		// opened the breaker, so on the promoted node.
		if breakers.Load() > 0 && resumedAt.Load() == nil {
			now := time.Now()
			resumedAt.CompareAndSwap(nil, &now)
		}
	}, breaker: func(open bool) {
		if open {
			breakers.Add(1)
			return
		}
		now := time.Now()
		closedAt.Store(&now)
	}}
	const name = "ledger"
	src, err := b.Source(ctx, "payments", name)
	require.NoError(t, err)
	c, err := consumer.New(src, h, consumer.Config{
		Name: name, Concurrency: 4, MaxInFlight: 32, Observer: obs, Logger: quietLog,
		Retry:         retry.Policy{MaxAttempts: 3, InitialInterval: 20 * time.Millisecond, MaxInterval: 20 * time.Millisecond},
		OutageBackoff: retry.Policy{InitialInterval: 50 * time.Millisecond, MaxInterval: 500 * time.Millisecond},
	}, middleware.Idempotency(st))
	require.NoError(t, err)
	runErr := make(chan error, 1)
	go func() { runErr <- c.Run(ctx) }()

	go func() {
		for i := range clusterMessages {
			msg := &consumer.Message{ID: fmt.Sprintf("m-%d", i), Key: fmt.Sprintf("k%d", i%clusterKeys), Body: []byte(strconv.Itoa(i))}
			if err := b.Publish(ctx, "payments", msg); err != nil {
				return
			}
			time.Sleep(clusterPace)
		}
	}()

	select {
	case <-killNow:
	case err := <-runErr:
		t.Fatalf("consumer stopped before the kill: %v", err)
	case <-ctx.Done():
		t.Fatalf("only %d effects before the kill", processed.Load())
	}
	clusterNode(t, "kill", primary)
	killAt := time.Now()
	restarted := false
	t.Cleanup(func() { // a failed run leaves the cluster whole for the next test
		if !restarted {
			_ = exec.Command(filepath.Join("..", "scripts", "cluster.sh"), "restart", primary).Run()
		}
	})
	clusterNode(t, "promote", standby)
	promoted := time.Since(killAt)
	t.Logf("killed %s after %d effects, promoted %s after %v", primary, processed.Load(), standby, promoted.Round(time.Millisecond))
	waitFor(t, ctx, "progress after the promotion", func() bool { return resumedAt.Load() != nil })
	resume := resumedAt.Load().Sub(killAt)

	// The old primary, restarted, must not take writes again.
	clusterNode(t, "restart", primary)
	restarted = true
	now, then := pgRoles(t, ctx, nodes)
	require.Equal(t, standby, now, "the promoted node stays the primary")
	require.Equal(t, primary, then, "the restarted old primary rejoins as a standby")
	var port int
	require.NoError(t, pool.QueryRow(ctx, "SELECT inet_server_port()").Scan(&port))
	require.Equal(t, pgNodeAddr(t, nodes, standby), "127.0.0.1:"+strconv.Itoa(port), "the DSN writes to the promoted node")

	poison, want, wantRetried := 0, 0, 0
	for i := range clusterMessages {
		switch {
		case pgPoison(i):
			poison++
		case pgRetried(i):
			wantRetried++
			want++
		default:
			want++
		}
	}
	var distinct int
	waitFor(t, ctx, "every effect", func() bool {
		return pool.QueryRow(ctx, "SELECT count(*) FROM "+effects).Scan(&distinct) == nil && distinct >= want
	})
	waitFor(t, ctx, "every dead letter", func() bool { return len(mb.DeadLetters("payments", name)) >= poison })
	waitFor(t, ctx, "an empty source", func() bool { return mb.Depth("payments") == 0 && mb.InFlight("payments") == 0 })
	require.NoError(t, c.Stop(ctx))
	require.NoError(t, <-runErr)

	var duplicated int
	require.NoError(t, pool.QueryRow(ctx, "SELECT coalesce(sum(n - 1), 0) FROM "+effects).Scan(&duplicated))
	outOfOrder := pgOutOfOrder(t, ctx, pool, effects)
	dead := len(mb.DeadLetters("payments", name))
	receipts := pgReceipts(t, ctx, b, want)
	t.Logf("%s killed, %s promoted after %v: %d of %d effects, %d duplicated, %d out of order, %d dead letters (%d poison), %d retried (%d by design), %d of %d receipts relayed; consumer resumed %v after the kill, breaker opened %d times, last closed %v after the kill",
		primary, standby, promoted.Round(time.Millisecond), distinct, want, duplicated, outOfOrder, dead, poison, retried.Load(), wantRetried, receipts, want, resume.Round(time.Millisecond), breakers.Load(), pgSince(closedAt.Load(), killAt))
	require.Equal(t, want, distinct, "effects (0 lost)")
	require.Zero(t, duplicated, "duplicated effects")
	require.Zero(t, outOfOrder, "effects out of key order")
	require.Equal(t, poison, dead, "dead letters: the poison messages only")
	require.Equal(t, int64(wantRetried), retried.Load(), "retries: the failing first attempts only (an outage holds, never retries)")
	require.Positive(t, breakers.Load(), "the breaker paused intake during the failover")
	require.Equal(t, want, receipts, "outbox rows relayed")
}

// pgRoles asks every node of PG_CLUSTER_NODES whether it is in recovery and
// returns the primary's and the standby's names.
func pgRoles(t *testing.T, ctx context.Context, nodes string) (primary, standby string) {
	for _, n := range strings.Split(nodes, ",") {
		name, addr, _ := strings.Cut(n, "=")
		conn, err := pgx.Connect(ctx, "postgres://postgres@"+addr+"/test?sslmode=disable")
		require.NoError(t, err, name)
		var inRecovery bool
		err = conn.QueryRow(ctx, "SELECT pg_is_in_recovery()").Scan(&inRecovery)
		_ = conn.Close(ctx)
		require.NoError(t, err, name)
		if inRecovery {
			standby = name
		} else {
			require.Empty(t, primary, "two primaries: %s and %s", primary, name)
			primary = name
		}
	}
	require.NotEmpty(t, primary, "a primary")
	require.NotEmpty(t, standby, "a standby")
	return primary, standby
}

// pgNodeAddr returns the address of node in a NAME=host:port,… list.
func pgNodeAddr(t *testing.T, nodes, node string) string {
	for _, n := range strings.Split(nodes, ",") {
		if name, addr, _ := strings.Cut(n, "="); name == node {
			return addr
		}
	}
	t.Fatalf("no node %s in %s", node, nodes)
	return ""
}

// pgOutOfOrder counts effects committed before an earlier message of their
// key, among the messages that never failed (a retried message is, by
// design, committed after the ones behind it).
func pgOutOfOrder(t *testing.T, ctx context.Context, pool *pgxpool.Pool, effects string) int {
	rows, err := pool.Query(ctx, "SELECT key, seq FROM "+effects+" ORDER BY ord")
	require.NoError(t, err)
	defer rows.Close()
	last, n := map[string]int{}, 0
	for rows.Next() {
		var key string
		var seq int
		require.NoError(t, rows.Scan(&key, &seq))
		if pgRetried(seq) {
			continue
		}
		if prev, ok := last[key]; ok && seq < prev {
			n++
		}
		last[key] = seq
	}
	require.NoError(t, rows.Err())
	return n
}

// pgReceipts reads the relayed receipts until want distinct IDs arrived or
// a quiet second passed, and returns how many distinct IDs it saw.
func pgReceipts(t *testing.T, ctx context.Context, b adapters.Broker, want int) int {
	src, err := b.Source(ctx, "receipts", "check")
	require.NoError(t, err)
	seen := map[string]bool{}
	for len(seen) < want {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		ds, err := src.Receive(rctx, 100)
		cancel()
		if err != nil {
			break
		}
		for _, d := range ds {
			seen[d.Message().ID] = true
			require.NoError(t, d.Ack(ctx))
		}
	}
	return len(seen)
}

// pgSince returns how long after start at was, or -1 when at is nil.
func pgSince(at *time.Time, start time.Time) time.Duration {
	if at == nil {
		return -1
	}
	return at.Sub(start).Round(time.Millisecond)
}
