//go:build faults

package adapters_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/envtest"
	"github.com/oncely/oncely/internal/pgtest"
	"github.com/oncely/oncely/middleware"
	pgstore "github.com/oncely/oncely/store/postgres"
)

// The node-failure runs: a consumer with dedupe (a Postgres store) takes
// keyed messages from a broker cluster started by scripts/cluster.sh while a
// producer publishes; the node that holds the source (the stream leader,
// the primary) is killed and later restarted. Every run must end with each
// message's effect committed exactly once, per key in publish order.

const (
	clusterMessages = 1200 // published per run
	clusterKeys     = 8
	clusterPace     = 4 * time.Millisecond // between two publishes
	clusterKillAt   = 300                  // effects committed before the kill
)

// clusterVar returns the variable scripts/cluster.sh printed (the fault step
// of scripts/test.sh exports them). Missing, it fails under CI and skips
// elsewhere.
func clusterVar(t *testing.T, name, broker string) string {
	v := os.Getenv(name)
	if v == "" {
		envtest.Missing(t, name+" (eval \"$(scripts/cluster.sh start "+broker+")\")", fmt.Errorf("%s is not set", name))
	}
	return v
}

// clusterNode runs scripts/cluster.sh kill|restart NODE.
func clusterNode(t *testing.T, action, node string) {
	out, err := exec.Command(filepath.Join("..", "scripts", "cluster.sh"), action, node).CombinedOutput()
	require.NoError(t, err, "cluster.sh %s %s: %s", action, node, out)
}

// nodeAt names the node listening on addr, from a NAME=host:port,… list.
func nodeAt(t *testing.T, nodes, addr string) string {
	for _, n := range strings.Split(nodes, ",") {
		name, a, _ := strings.Cut(n, "=")
		if a == addr {
			return name
		}
	}
	t.Fatalf("no node at %s in %s", addr, nodes)
	return ""
}

// clusterFault says how one broker's run kills its node.
type clusterFault struct {
	url     string
	source  string
	leader  func(t *testing.T) string // the node holding source now
	settled func(t *testing.T)        // waits until the cluster is whole again after a restart
}

// clusterResult is what one run measured.
type clusterResult struct {
	lost, duplicated, outOfOrder int
	publishStall, resume         time.Duration
	killed                       string
}

// runClusterFault runs the producer, the consumer and the kill, and
// returns the counts and times.
func runClusterFault(t *testing.T, f clusterFault) clusterResult {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	pg := pgtest.New(t)
	_, err := pg.Pool.Exec(ctx, "CREATE TABLE effects (id text PRIMARY KEY, key text NOT NULL, seq int NOT NULL, n int NOT NULL DEFAULT 1, ord bigserial)")
	require.NoError(t, err)
	st, err := pgstore.New(pg.Pool, pgstore.Config{Schema: pg.Schema, Logger: quietLog, NoPruning: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close(context.Background()) })

	b, err := adapters.Open(ctx, f.url, adapters.WithLogger(quietLog))
	require.NoError(t, err)
	defer func() { _ = b.Close() }()
	const name = "ledger"
	src, err := b.Source(ctx, f.source, name)
	require.NoError(t, err)

	h := pgstore.HandlerFunc(func(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
		seq, err := strconv.Atoi(string(msg.Body))
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, "INSERT INTO effects (id, key, seq) VALUES ($1, $2, $3) ON CONFLICT (id) DO UPDATE SET n = effects.n + 1", msg.ID, msg.Key, seq)
		return err
	})
	var (
		processed     atomic.Int64
		killAt        atomic.Pointer[time.Time]
		firstAfter    atomic.Int64 // index of the first message published after the kill
		resumedAt     atomic.Pointer[time.Time]
		killNow       = make(chan struct{})
		killOnce      sync.Once
		publishResume atomic.Pointer[time.Time]
	)
	firstAfter.Store(clusterMessages)
	obs := &matrixObserver{settled: func(ev consumer.Event) {
		if ev.Outcome != consumer.OutcomeProcessed {
			return
		}
		if processed.Add(1) >= clusterKillAt {
			killOnce.Do(func() { close(killNow) })
		}
		i, _ := strconv.Atoi(strings.TrimPrefix(ev.Message.ID, "m-"))
		if int64(i) >= firstAfter.Load() && resumedAt.Load() == nil {
			now := time.Now()
			resumedAt.CompareAndSwap(nil, &now)
		}
	}, breaker: func(bool) {}}
	c, err := consumer.New(src, h, consumer.Config{Name: name, Concurrency: 4, MaxInFlight: 32, Observer: obs, Logger: quietLog}, middleware.Idempotency(st))
	require.NoError(t, err)
	runErr := make(chan error, 1)
	go func() { runErr <- c.Run(ctx) }()

	// The producer: one message at a time, each retried until the broker
	// confirms it (a retry may store it twice; the claim absorbs that).
	produced := make(chan error, 1)
	go func() {
		for i := range clusterMessages {
			killed := killAt.Load() != nil
			if killed && firstAfter.Load() == clusterMessages {
				firstAfter.Store(int64(i))
			}
			msg := &consumer.Message{ID: fmt.Sprintf("m-%d", i), Key: fmt.Sprintf("k%d", i%clusterKeys), Body: []byte(strconv.Itoa(i))}
			for {
				pctx, pcancel := context.WithTimeout(ctx, 3*time.Second)
				err := b.Publish(pctx, f.source, msg)
				pcancel()
				if err == nil {
					break
				}
				if ctx.Err() != nil {
					produced <- fmt.Errorf("publishing %s: %w", msg.ID, err)
					return
				}
				time.Sleep(50 * time.Millisecond)
			}
			if killed && publishResume.Load() == nil {
				now := time.Now()
				publishResume.Store(&now)
			}
			time.Sleep(clusterPace)
		}
		produced <- nil
	}()

	var res clusterResult
	select {
	case <-killNow:
	case err := <-runErr:
		t.Fatalf("consumer stopped before the kill: %v", err)
	case <-ctx.Done():
		t.Fatalf("only %d effects before the kill", processed.Load())
	}
	res.killed = f.leader(t)
	clusterNode(t, "kill", res.killed)
	now := time.Now()
	restarted := false
	t.Cleanup(func() { // a failed run leaves the cluster whole for the next test
		if !restarted {
			clusterNode(t, "restart", res.killed)
		}
	})
	killAt.Store(&now)
	t.Logf("killed %s after %d effects", res.killed, processed.Load())

	require.NoError(t, <-produced)
	waitFor(t, ctx, "progress after the kill", func() bool { return resumedAt.Load() != nil })
	clusterNode(t, "restart", res.killed)
	restarted = true
	f.settled(t)
	res.publishStall = publishResume.Load().Sub(now)
	res.resume = resumedAt.Load().Sub(now)

	var distinct int
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		require.NoError(t, pg.Pool.QueryRow(ctx, "SELECT count(*) FROM effects").Scan(&distinct))
		if distinct >= clusterMessages {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	require.NoError(t, c.Stop(ctx))

	res.lost = clusterMessages - distinct
	require.NoError(t, pg.Pool.QueryRow(ctx, "SELECT coalesce(sum(n - 1), 0) FROM effects").Scan(&res.duplicated))
	rows, err := pg.Pool.Query(ctx, "SELECT key, seq FROM effects ORDER BY ord")
	require.NoError(t, err)
	last := map[string]int{}
	for rows.Next() {
		var key string
		var seq int
		require.NoError(t, rows.Scan(&key, &seq))
		if prev, ok := last[key]; ok && seq < prev {
			res.outOfOrder++
		}
		last[key] = seq
	}
	require.NoError(t, rows.Err())
	t.Logf("%s killed: %d of %d effects, %d lost, %d duplicated, %d out of order; producer resumed after %v, consumer after %v",
		res.killed, distinct, clusterMessages, res.lost, res.duplicated, res.outOfOrder, res.publishStall.Round(time.Millisecond), res.resume.Round(time.Millisecond))
	return res
}

// waitFor polls cond until it holds, failing the test at ctx's end.
func waitFor(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("no %s before the deadline", what)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
