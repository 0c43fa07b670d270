//go:build faults

package adapters_test

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
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
	"github.com/oncely/oncely/internal/pgtest"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/outbox"
	"github.com/oncely/oncely/retry"
	pgstore "github.com/oncely/oncely/store/postgres"
)

// rabbitCluster reaches the three nodes scripts/cluster.sh start rabbitmq
// started: their URL, their names and ports, and their rabbitmqctl.
type rabbitCluster struct {
	url, nodes, ctl string
}

func rabbitClusterVars(t *testing.T) rabbitCluster {
	return rabbitCluster{
		url:   clusterVar(t, "RABBITMQ_CLUSTER_URL", "rabbitmq"),
		nodes: clusterVar(t, "RABBITMQ_CLUSTER_NODES", "rabbitmq"),
		ctl:   clusterVar(t, "RABBITMQ_CLUSTER_CTL", "rabbitmq"),
	}
}

// query runs rabbitmqctl ARGS on the first node that answers, and returns
// its output's lines split into tab-separated fields.
func (rc rabbitCluster) query(ctx context.Context, args ...string) ([][]string, error) {
	var errs []error
	for _, n := range strings.Split(rc.nodes, ",") {
		name, _, _ := strings.Cut(n, "=")
		qctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		out, err := exec.CommandContext(qctx, rc.ctl, append([]string{name, "-q", "--no-table-headers"}, args...)...).Output()
		cancel()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
			continue
		}
		var rows [][]string
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if line != "" {
				rows = append(rows, strings.Split(line, "\t"))
			}
		}
		return rows, nil
	}
	return nil, errors.Join(errs...)
}

// leader names the node leading the quorum queue ("" when unknown).
func (rc rabbitCluster) leader(ctx context.Context, queue string) string {
	rows, err := rc.query(ctx, "list_queues", "name", "leader")
	if err != nil {
		return ""
	}
	for _, r := range rows {
		if len(r) == 2 && r[0] == queue {
			node, _, _ := strings.Cut(r[1], "@")
			return node
		}
	}
	return ""
}

// whole reports whether every listed quorum queue has its three members
// online.
func (rc rabbitCluster) whole(ctx context.Context, queues ...string) bool {
	rows, err := rc.query(ctx, "list_queues", "name", "online")
	if err != nil {
		return false
	}
	online := map[string]int{}
	for _, r := range rows {
		if len(r) == 2 {
			online[r[0]] = strings.Count(r[1], "@")
		}
	}
	for _, q := range queues {
		if online[q] != 3 {
			return false
		}
	}
	return true
}

// connectedTo names the node serving the connection named name.
func (rc rabbitCluster) connectedTo(t *testing.T, ctx context.Context, name string) string {
	rows, err := rc.query(ctx, "list_connections", "port", "client_properties")
	require.NoError(t, err)
	for _, r := range rows {
		if len(r) == 2 && strings.Contains(r[1], `"`+name+`"`) {
			return nodeAt(t, rc.nodes, "127.0.0.1:"+r[0])
		}
	}
	t.Fatalf("no connection named %q in %v", name, rows)
	return ""
}

// TestFaultRabbitMQClusterQueueLeaderKilled: on three RabbitMQ nodes
// (scripts/cluster.sh start rabbitmq) reached by one URL listing all three,
// with the source a quorum queue on all three, the node leading the queue
// is killed mid-run (the one every client connected to first, so their
// connections die with it) and restarted, with retries, dead letters and
// the outbox relay running (runClusterFault). Every message's effect
// commits once, per key in publish order, every poison message is
// dead-lettered and every outgoing message relayed.
func TestFaultRabbitMQClusterQueueLeaderKilled(t *testing.T) {
	rc := rabbitClusterVars(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	source := fmt.Sprintf("cluster%d", time.Now().UnixNano())
	res := runClusterFault(t, clusterFault{
		url:    rc.url + "?prefetch=32",
		source: source,
		leader: func(t *testing.T) string {
			var l string
			waitFor(t, ctx, "the source queue's leader", func() bool { l = rc.leader(ctx, source); return l != "" })
			return l
		},
		settled: func(t *testing.T) {
			waitFor(t, ctx, "the source queue with its three members online", func() bool { return rc.whole(ctx, source) })
		},
	})
	res.requireNothingLost(t)
	res.requireKeyOrder(t)
}

// TestFaultRabbitMQClusterCopyNodeKilled: while a consumer sends failing
// messages to its retry queues and its dead-letter queue, the node its
// connection (and so its copies' publishes) goes through is killed, then
// restarted. A copy is acked at the source only after its publisher
// confirm: every message that succeeds on a retry commits its effect once,
// every message that fails for good is in the dead-letter queue, and no
// message is missing from both. No copy stays in a retry queue: the
// cluster's dead-letter worker publishes again, after 10 s, the expired
// copies a dead source leader never confirmed (docs/brokers.md).
func TestFaultRabbitMQClusterCopyNodeKilled(t *testing.T) {
	const (
		n      = 600
		killAt = 60 // copies confirmed before the kill
	)
	rc := rabbitClusterVars(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	pg := pgtest.New(t)
	_, err := pg.Pool.Exec(ctx, "CREATE TABLE effects (id text PRIMARY KEY, n int NOT NULL DEFAULT 1)")
	require.NoError(t, err)
	st, err := pgstore.New(pg.Pool, pgstore.Config{Schema: pg.Schema, Logger: quietLog, NoPruning: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close(context.Background()) })

	b, err := adapters.Open(ctx, rc.url+"?prefetch=32&tiers=200ms,1s", adapters.WithLogger(quietLog))
	require.NoError(t, err)
	defer func() { _ = b.Close() }()
	const name = "ledger"
	source := fmt.Sprintf("copies%d", time.Now().UnixNano())
	src, err := b.Source(ctx, source, name)
	require.NoError(t, err)

	// Every third message fails its first attempt (a retry copy), every
	// seventh fails for good (a dead-letter copy); the rest succeed.
	permanent := func(seq int) bool { return seq%7 == 0 }
	out := source + "-out" // the outbox's destination: one message per effect
	send, err := outbox.NewSender(pg.Schema)
	require.NoError(t, err)
	h := pgstore.HandlerFunc(func(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
		seq, err := strconv.Atoi(string(msg.Body))
		if err != nil {
			return err
		}
		switch {
		case permanent(seq):
			return consumer.Permanent(fmt.Errorf("message %d is refused", seq))
		case seq%3 == 0 && msg.Attempt == 1:
			return fmt.Errorf("message %d fails its first attempt", seq)
		}
		if _, err = tx.Exec(ctx, "INSERT INTO effects (id) VALUES ($1) ON CONFLICT (id) DO UPDATE SET n = effects.n + 1", msg.ID); err != nil {
			return err
		}
		return send.Send(ctx, tx, out, &consumer.Message{ID: "o-" + msg.ID, Key: msg.Key, Body: msg.Body})
	})
	var (
		copies    atomic.Int64
		killNow   = make(chan struct{})
		killOnce  sync.Once
		prod      = newClusterProducer(n)
		resumedAt atomic.Pointer[time.Time]
	)
	obs := &matrixObserver{settled: func(ev consumer.Event) {
		if ev.Outcome == consumer.OutcomeRetried || ev.Outcome == consumer.OutcomeDeadLettered {
			if copies.Add(1) >= killAt {
				killOnce.Do(func() { close(killNow) })
			}
		}
		i, _ := strconv.Atoi(strings.TrimPrefix(ev.Message.ID, "m-"))
		if int64(i) >= prod.firstAfter.Load() && resumedAt.Load() == nil {
			now := time.Now()
			resumedAt.CompareAndSwap(nil, &now)
		}
	}, breaker: func(bool) {}}
	c, err := consumer.New(src, h, consumer.Config{Name: name, Concurrency: 4, MaxInFlight: 32, Observer: obs, Logger: quietLog,
		Retry: retry.Policy{MaxAttempts: 3, InitialInterval: 200 * time.Millisecond, MaxInterval: time.Second}}, middleware.Idempotency(st))
	require.NoError(t, err)
	runErr := make(chan error, 1)
	go func() { runErr <- c.Run(ctx) }()

	defer startClusterRelay(t, ctx, pg, b)()
	produced := prod.run(ctx, b, source, func(i int) string { return fmt.Sprintf("k%d", i%clusterKeys) }, 3*time.Second)

	select {
	case <-killNow:
	case err := <-runErr:
		t.Fatalf("consumer stopped before the kill: %v", err)
	case <-ctx.Done():
		t.Fatalf("only %d copies before the kill", copies.Load())
	}
	killed := rc.connectedTo(t, ctx, "oncely "+name+" "+source)
	clusterNode(t, "kill", killed)
	now := time.Now()
	prod.kill()
	atKill := copies.Load()
	restarted := false
	t.Cleanup(func() {
		if !restarted {
			clusterNode(t, "restart", killed)
		}
	})
	require.NoError(t, <-produced)
	waitFor(t, ctx, "progress after the kill", func() bool { return resumedAt.Load() != nil })
	clusterNode(t, "restart", killed)
	restarted = true

	var wantEffects, wantDead int
	for i := range n {
		if permanent(i) {
			wantDead++
		} else {
			wantEffects++
		}
	}
	var effects, duplicated int
	var dead []adapters.DeadLetter
	// Copies in a retry queue: ready, or expired and not yet confirmed in
	// the source queue by the broker's dead-letter worker.
	retryHeld := func() int {
		rows, err := rc.query(ctx, "list_queues", "name", "messages")
		require.NoError(t, err)
		held := 0
		for _, r := range rows {
			if len(r) == 2 && strings.HasPrefix(r[0], source+"."+name+".retry.") {
				m, _ := strconv.Atoi(r[1])
				held += m
			}
		}
		return held
	}
	var complete time.Duration
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		require.NoError(t, pg.Pool.QueryRow(ctx, "SELECT count(*), coalesce(sum(n - 1), 0) FROM effects").Scan(&effects, &duplicated))
		if dead, err = b.DeadLetters(ctx, source, name, 0); err != nil {
			dead = nil
		}
		if effects >= wantEffects && len(dead) >= wantDead && retryHeld() == 0 {
			complete = time.Since(now)
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	require.NoError(t, c.Stop(ctx))
	outboxLost := clusterOutgoing(t, ctx, b, out, wantEffects)
	waitFor(t, ctx, "every queue with its three members online", func() bool {
		return rc.whole(ctx, source, source+"."+name+".dlq")
	})
	// Copies still in a retry queue once the consumer stopped, 90 s after
	// the last publish at the latest: held there past their delay.
	stranded := retryHeld()
	var wrongDead, copiesTwice int
	for _, d := range dead {
		seq, _ := strconv.Atoi(strings.TrimPrefix(d.Message.ID, "m-"))
		if !permanent(seq) {
			wrongDead++
		}
		if d.Copies > 1 {
			copiesTwice++
		}
	}
	t.Logf("%s killed after %d copies: %d of %d effects (%d duplicated, %d stranded in a retry queue), %d of %d dead letters (%d wrong, %d with two copies); %d of %d outgoing messages lost; resumed after %v, every effect and dead letter in and the retry queues empty after %v",
		killed, atKill, effects, wantEffects, duplicated, stranded, len(dead), wantDead, wrongDead, copiesTwice, outboxLost, wantEffects, resumedAt.Load().Sub(now).Round(time.Millisecond), complete.Round(time.Millisecond))
	require.Zero(t, stranded, "copies stranded in a retry queue")
	require.Zero(t, outboxLost, "outgoing messages the relay never published")
	require.Equal(t, wantEffects, effects, "effects")
	require.Zero(t, duplicated, "duplicated effects")
	require.Equal(t, wantDead, len(dead), "dead letters")
	require.Zero(t, wrongDead, "dead letters of messages that succeed")
}
