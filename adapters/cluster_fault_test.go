//go:build faults

package adapters_test

import (
	"context"
	"errors"
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
	"github.com/oncely/oncely/outbox"
	"github.com/oncely/oncely/retry"
	pgstore "github.com/oncely/oncely/store/postgres"
)

// The node-failure runs: a consumer with dedupe (a Postgres store) takes
// keyed messages from a broker cluster started by scripts/cluster.sh while a
// producer publishes, broker-side retries and dead letters are published,
// and an outbox relay carries one outgoing message per effect back to the
// cluster; the node that holds the source (the stream leader, the primary)
// is killed and later restarted. Every run must end with each message's
// effect committed exactly once, per key in publish order, every poison
// message in the dead letters, and every outgoing message published.

const (
	clusterMessages = 1200 // published per run
	clusterKeys     = 8
	clusterPace     = 4 * time.Millisecond // between two publishes
	clusterKillAt   = 300                  // effects committed before the kill
)

// clusterKind is what the handler does with message i: most commit their
// effect at once; every 25th fails its first attempt (a broker-side retry
// copy is published); every 100th always fails (a dead-letter copy after
// clusterRetry's attempts). Retried and poison messages have keys of their
// own: a broker retry gives up per-key order for its message by design.
func clusterKind(i int) (kind, key string) {
	switch {
	case i%100 == 37:
		return "poison", fmt.Sprintf("p%d", i)
	case i%25 == 11:
		return "retried", fmt.Sprintf("r%d", i)
	default:
		return "plain", fmt.Sprintf("k%d", i%clusterKeys)
	}
}

var clusterRetry = retry.Policy{MaxAttempts: 3, InitialInterval: 200 * time.Millisecond, MaxInterval: 200 * time.Millisecond, Jitter: retry.NoJitter}

// clusterExpected counts the messages whose effects commit (all but the
// poison ones) and lists the poison IDs.
func clusterExpected() (effects int, poison map[string]bool) {
	poison = map[string]bool{}
	for i := range clusterMessages {
		if kind, _ := clusterKind(i); kind == "poison" {
			poison[fmt.Sprintf("m-%d", i)] = true
		}
	}
	return clusterMessages - len(poison), poison
}

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
	leader  func(t *testing.T) string // the node to kill: the one holding source (or, with onCopy, the copies' destination) now
	settled func(t *testing.T)        // waits until the cluster is whole again after a restart
	// onCopy kills the node as a handler fails (after clusterKillAt
	// effects) so that its retry or dead-letter copy is being published
	// while the node dies; otherwise the node dies between two effects.
	onCopy bool
}

// clusterResult is what one run measured.
type clusterResult struct {
	lost, duplicated, outOfOrder int
	deadLettersLost, outboxLost  int // poison messages not in the dead letters; outgoing messages not published
	publishStall, resume         time.Duration
	killed                       string
}

// requireNothingLost asserts the counts every node-failure run must end with.
func (r clusterResult) requireNothingLost(t *testing.T) {
	t.Helper()
	require.Zero(t, r.lost, "lost effects")
	require.Zero(t, r.duplicated, "duplicated effects")
	require.Zero(t, r.deadLettersLost, "poison messages missing from the dead letters")
	require.Zero(t, r.outboxLost, "outgoing messages the relay never published")
}

// requireKeyOrder asserts that every key's effects committed in publish
// order, for the failures a broker keeps that order through.
func (r clusterResult) requireKeyOrder(t *testing.T) {
	t.Helper()
	require.Zero(t, r.outOfOrder, "effects out of key order")
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

	var (
		processed atomic.Int64
		resumedAt atomic.Pointer[time.Time]
		killNow   = make(chan struct{})
		killOnce  sync.Once
		prod      = newClusterProducer(clusterMessages)
	)
	out := f.source + "-out"
	send, err := outbox.NewSender(pg.Schema)
	require.NoError(t, err)
	h := pgstore.HandlerFunc(func(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
		seq, err := strconv.Atoi(string(msg.Body))
		if err != nil {
			return err
		}
		kind, _ := clusterKind(seq)
		copied := kind == "poison" || kind == "retried" && msg.Attempt == 1
		if copied && f.onCopy && processed.Load() >= clusterKillAt {
			killOnce.Do(func() { close(killNow) }) // the copy is published as the node dies
		}
		switch {
		case kind == "poison":
			return errors.New("poison: always fails")
		case copied:
			return errors.New("fails its first attempt")
		}
		if _, err = tx.Exec(ctx, "INSERT INTO effects (id, key, seq) VALUES ($1, $2, $3) ON CONFLICT (id) DO UPDATE SET n = effects.n + 1", msg.ID, msg.Key, seq); err != nil {
			return err
		}
		return send.Send(ctx, tx, out, &consumer.Message{ID: "o-" + msg.ID, Key: msg.Key, Body: msg.Body})
	})
	obs := &matrixObserver{settled: func(ev consumer.Event) {
		if ev.Outcome != consumer.OutcomeProcessed {
			return
		}
		if processed.Add(1) >= clusterKillAt && !f.onCopy {
			killOnce.Do(func() { close(killNow) })
		}
		i, _ := strconv.Atoi(strings.TrimPrefix(ev.Message.ID, "m-"))
		if int64(i) >= prod.firstAfter.Load() && resumedAt.Load() == nil {
			now := time.Now()
			resumedAt.CompareAndSwap(nil, &now)
		}
	}, breaker: func(bool) {}}
	c, err := consumer.New(src, h, consumer.Config{Name: name, Concurrency: 4, MaxInFlight: 32, Retry: clusterRetry, Observer: obs, Logger: quietLog}, middleware.Idempotency(st))
	require.NoError(t, err)
	runErr := make(chan error, 1)
	go func() { runErr <- c.Run(ctx) }()
	defer startClusterRelay(t, ctx, pg, b)()

	produced := prod.run(ctx, b, f.source, func(i int) string { _, key := clusterKind(i); return key }, 3*time.Second)

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
	prod.kill()
	t.Logf("killed %s after %d effects", res.killed, processed.Load())

	require.NoError(t, <-produced)
	waitFor(t, ctx, "progress after the kill", func() bool { return resumedAt.Load() != nil })
	clusterNode(t, "restart", res.killed)
	restarted = true
	f.settled(t)
	res.publishStall = prod.resumed.Load().Sub(now)
	res.resume = resumedAt.Load().Sub(now)

	expected, poison := clusterExpected()
	var distinct int
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		require.NoError(t, pg.Pool.QueryRow(ctx, "SELECT count(*) FROM effects").Scan(&distinct))
		if distinct >= expected {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	res.deadLettersLost = clusterDeadLetters(t, ctx, b, f.source, name, poison)
	require.NoError(t, c.Stop(ctx))
	res.outboxLost = clusterOutgoing(t, ctx, b, out, expected)

	res.lost = expected - distinct
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
	t.Logf("%s killed: %d of %d effects, %d lost, %d duplicated, %d out of order; %d of %d dead letters and %d of %d outgoing messages lost; producer resumed after %v, consumer after %v",
		res.killed, distinct, expected, res.lost, res.duplicated, res.outOfOrder, res.deadLettersLost, len(poison), res.outboxLost, expected,
		res.publishStall.Round(time.Millisecond), res.resume.Round(time.Millisecond))
	return res
}

// clusterDeadLetters waits (up to a minute) until every poison message is in
// the dead letters of (source, name) and returns how many are missing; a
// dead letter that is not poison fails the test.
func clusterDeadLetters(t *testing.T, ctx context.Context, b adapters.Broker, source, name string, poison map[string]bool) int {
	t.Helper()
	missing := len(poison)
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		dctx, dcancel := context.WithTimeout(ctx, 10*time.Second)
		dead, err := b.DeadLetters(dctx, source, name, 0)
		dcancel()
		if err != nil {
			t.Logf("reading the dead letters: %v", err)
			continue
		}
		missing = len(poison)
		for _, d := range dead {
			require.True(t, poison[d.Message.ID], "%s dead-lettered (%s: %s), but it is not poison", d.Message.ID, d.Reason(), d.Error())
			missing--
		}
		if missing == 0 {
			break
		}
	}
	return missing
}

// clusterProducer publishes the messages of a node-failure run, m-0 to
// m-(n-1), with key key(i) and body i, one at a time clusterPace apart,
// each tried again every 50 ms until the broker confirms it within timeout
// (a retry may store it twice; the claim absorbs that). It publishes the
// second half only after kill, so that messages published after the kill
// exist however late it comes; firstAfter is then the index of the first
// of them (n before) and resumed the time it was confirmed.
type clusterProducer struct {
	n          int
	firstAfter atomic.Int64
	killed     chan struct{}
	resumed    atomic.Pointer[time.Time]
}

func newClusterProducer(n int) *clusterProducer {
	p := &clusterProducer{n: n, killed: make(chan struct{})}
	p.firstAfter.Store(int64(n))
	return p
}

// kill marks the node's kill.
func (p *clusterProducer) kill() { close(p.killed) }

// run publishes through b until every message is confirmed or ctx ends,
// and then sends the outcome on the returned channel.
func (p *clusterProducer) run(ctx context.Context, b adapters.Broker, source string, key func(int) string, timeout time.Duration) <-chan error {
	done := make(chan error, 1)
	go func() {
		for i := range p.n {
			if i == p.n/2 {
				select {
				case <-p.killed:
				case <-ctx.Done():
					done <- fmt.Errorf("no kill before the second half: %w", ctx.Err())
					return
				}
			}
			killed := false
			select {
			case <-p.killed:
				killed = true
				p.firstAfter.CompareAndSwap(int64(p.n), int64(i))
			default:
			}
			msg := &consumer.Message{ID: fmt.Sprintf("m-%d", i), Key: key(i), Body: []byte(strconv.Itoa(i))}
			for {
				pctx, cancel := context.WithTimeout(ctx, timeout)
				err := b.Publish(pctx, source, msg)
				cancel()
				if err == nil {
					break
				}
				if ctx.Err() != nil {
					done <- fmt.Errorf("publishing %s: %w", msg.ID, err)
					return
				}
				time.Sleep(50 * time.Millisecond)
			}
			if killed {
				now := time.Now()
				p.resumed.CompareAndSwap(nil, &now)
			}
			time.Sleep(clusterPace)
		}
		done <- nil
	}()
	return done
}

// startClusterRelay runs an outbox relay of pg's schema to b until the
// returned stop is called.
func startClusterRelay(t *testing.T, ctx context.Context, pg *pgtest.DB, b adapters.Broker) (stop func()) {
	t.Helper()
	relay, err := outbox.NewRelay(pg.Pool, b, outbox.Config{Schema: pg.Schema, Logger: quietLog, PollInterval: 50 * time.Millisecond})
	require.NoError(t, err)
	relayCtx, cancel := context.WithCancel(ctx)
	relayErr := make(chan error, 1)
	go func() { relayErr <- relay.Run(relayCtx) }()
	return func() {
		cancel()
		<-relayErr
	}
}

// clusterOutgoing reads out, where the relay published one outgoing
// message per effect, until expected distinct IDs arrived (up to a
// minute), and returns how many never did.
func clusterOutgoing(t *testing.T, ctx context.Context, b adapters.Broker, out string, expected int) int {
	t.Helper()
	var (
		mu   sync.Mutex
		seen = map[string]bool{}
		all  = make(chan struct{})
	)
	src, err := b.Source(ctx, out, "sink")
	require.NoError(t, err)
	sink, err := consumer.New(src, consumer.HandlerFunc(func(_ context.Context, m *consumer.Message) error {
		mu.Lock()
		defer mu.Unlock()
		seen[m.ID] = true
		if len(seen) == expected {
			close(all)
		}
		return nil
	}), consumer.Config{Name: "sink", Concurrency: 4, Logger: quietLog, Duplicates: consumer.AllowDuplicates("counts distinct IDs")})
	require.NoError(t, err)
	sctx, stop := context.WithTimeout(ctx, time.Minute)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- sink.Run(sctx) }()
	select {
	case <-all:
	case <-sctx.Done():
	}
	require.NoError(t, sink.Stop(ctx))
	<-done
	mu.Lock()
	defer mu.Unlock()
	return expected - len(seen)
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
