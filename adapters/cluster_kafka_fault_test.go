//go:build faults

package adapters_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/adapters/kafka"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/pgtest"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/outbox"
	"github.com/oncely/oncely/retry"
	pgstore "github.com/oncely/oncely/store/postgres"
)

// The Kafka node-failure runs, on three KRaft nodes (scripts/cluster.sh start
// kafka): the source, retry and dead-letter topics are created by oncely
// with replication_factor=3 and min_insync_replicas=2; a consumer with
// dedupe (a Postgres store) handles keyed messages while a producer
// publishes; every tenth message fails its first attempt (a retry copy),
// every 25th fails every attempt (a retry copy, then a dead-letter copy). A
// node is killed mid-run; with it down, every message must be handled
// exactly once or dead-lettered exactly once; then it is restarted and
// rejoins every partition's in-sync replicas.

const (
	kafkaGroup        = "ledger"
	kafkaRetryTier    = time.Second
	kafkaRetried      = 3 // i%10 == kafkaRetried: fails its first attempt
	kafkaDeadLettered = 7 // i%25 == kafkaDeadLettered: fails every attempt
	kafkaDownDeadline = 2 * time.Minute
)

// kafkaFate says whether message i fails its first attempt and whether it
// fails every attempt.
func kafkaFate(i int) (retried, dead bool) {
	return i%10 == kafkaRetried, i%25 == kafkaDeadLettered
}

// TestFaultKafkaClusterLeaderKilled kills the node leading the source
// partition after 300 effects and restarts it once everything was handled.
func TestFaultKafkaClusterLeaderKilled(t *testing.T) {
	res := runKafkaClusterFault(t, kafkaClusterCase{
		killOn:    consumer.OutcomeProcessed,
		killAfter: clusterKillAt,
		victim:    func(k *kafkaCluster) string { return k.leader(t, k.source) },
		resumedOn: func(o consumer.Outcome) bool { return o == consumer.OutcomeProcessed },
	})
	res.check(t)
}

// TestFaultKafkaClusterCopyNodeKilled kills the node leading the retry
// topic's partition while retry and dead-letter copies are produced (after
// the 20th retry copy was confirmed) and restarts it once everything was
// handled.
func TestFaultKafkaClusterCopyNodeKilled(t *testing.T) {
	res := runKafkaClusterFault(t, kafkaClusterCase{
		killOn:    consumer.OutcomeRetried,
		killAfter: 20,
		victim:    func(k *kafkaCluster) string { return k.leader(t, k.retry) },
		resumedOn: func(o consumer.Outcome) bool {
			return o == consumer.OutcomeRetried || o == consumer.OutcomeDeadLettered
		},
	})
	res.check(t)
}

// kafkaClusterCase says when a run kills which node, and which outcome of a
// message published after the kill counts as resumed progress.
type kafkaClusterCase struct {
	killOn    consumer.Outcome
	killAfter int64
	victim    func(k *kafkaCluster) string
	resumedOn func(consumer.Outcome) bool
}

// kafkaClusterResult is what one run counted and measured.
type kafkaClusterResult struct {
	killed                                string
	effects, lost, duplicated, outOfOrder int
	letters, lettersLost, letterCopies    int
	deadWithEffect, outboxLost            int
	resume, publishStall, done            time.Duration
}

func (r kafkaClusterResult) check(t *testing.T) {
	t.Helper()
	require.Zero(t, r.lost, "lost effects")
	require.Zero(t, r.duplicated, "duplicated effects")
	require.Zero(t, r.outOfOrder, "first-attempt effects out of key order")
	require.Zero(t, r.lettersLost, "dead letters missing")
	require.Zero(t, r.letterCopies, "dead letters stored more than once")
	require.Zero(t, r.deadWithEffect, "dead-lettered messages with an effect")
	require.Zero(t, r.outboxLost, "outgoing messages the relay never published")
}

// kafkaCluster reads the cluster's metadata for one run's topics.
type kafkaCluster struct {
	ctx                context.Context
	adm                *kadm.Client
	nodes              string
	source, retry, dlq string
	topics             []string
}

// leader names the node leading topic's partition 0.
func (k *kafkaCluster) leader(t *testing.T, topic string) string {
	var name string
	waitFor(t, k.ctx, "a leader of "+topic, func() bool {
		md, err := k.adm.Metadata(k.ctx, topic)
		if err != nil {
			return false
		}
		p, ok := md.Topics[topic].Partitions[0]
		if !ok || p.Leader < 0 {
			return false
		}
		for _, b := range md.Brokers {
			if b.NodeID == p.Leader {
				name = nodeAt(t, k.nodes, net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port))))
				return true
			}
		}
		return false
	})
	return name
}

// whole reports whether every partition of the run's topics has a leader
// and all three replicas in sync.
func (k *kafkaCluster) whole() bool {
	md, err := k.adm.Metadata(k.ctx, k.topics...)
	if err != nil || len(md.Brokers) != 3 {
		return false
	}
	for _, topic := range k.topics {
		td, ok := md.Topics[topic]
		if !ok || td.Err != nil || len(td.Partitions) == 0 {
			return false
		}
		for _, p := range td.Partitions {
			if p.Leader < 0 || len(p.ISR) != 3 {
				return false
			}
		}
	}
	return true
}

// checkDurability requires every topic of the run to have three replicas and
// min.insync.replicas=2 set on the topic itself (not the broker's default).
func (k *kafkaCluster) checkDurability(t *testing.T) {
	md, err := k.adm.Metadata(k.ctx, k.topics...)
	require.NoError(t, err)
	for _, topic := range k.topics {
		for _, p := range md.Topics[topic].Partitions {
			require.Len(t, p.Replicas, 3, "replicas of %s/%d", topic, p.Partition)
		}
	}
	// DescribeConfigs goes to any broker, which may learn of a topic just
	// created a moment after its leader did.
	var rcs kadm.ResourceConfigs
	waitFor(t, k.ctx, "every broker to know the run's topics", func() bool {
		rcs, err = k.adm.DescribeTopicConfigs(k.ctx, k.topics...)
		if err == nil {
			for _, rc := range rcs {
				if rc.Err != nil {
					err = rc.Err
				}
			}
		}
		return !errors.Is(err, kerr.UnknownTopicOrPartition)
	})
	require.NoError(t, err)
	for _, rc := range rcs {
		require.NoError(t, rc.Err, rc.Name)
		found := false
		for _, c := range rc.Configs {
			if c.Key == "min.insync.replicas" {
				found = true
				require.Equal(t, "2", c.MaybeValue(), "min.insync.replicas of %s", rc.Name)
				require.Equal(t, kmsg.ConfigSourceDynamicTopicConfig, c.Source, "min.insync.replicas of %s set on the topic", rc.Name)
			}
		}
		require.True(t, found, "min.insync.replicas of %s described", rc.Name)
	}
}

// runKafkaClusterFault runs the producer, the consumer, the kill and the
// restart, and counts.
func runKafkaClusterFault(t *testing.T, tc kafkaClusterCase) kafkaClusterResult {
	brokers := clusterVar(t, "KAFKA_CLUSTER_BROKERS", "kafka")
	nodes := clusterVar(t, "KAFKA_CLUSTER_NODES", "kafka")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(brokers, ",")...))
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	source := fmt.Sprintf("kcluster%d", time.Now().UnixNano())
	k := &kafkaCluster{ctx: ctx, adm: kadm.NewClient(cl), nodes: nodes, source: source,
		retry: kafka.RetryTopic(source, kafkaGroup, kafkaRetryTier), dlq: kafka.DeadLetterTopic(source, kafkaGroup)}
	k.topics = []string{k.source, k.retry, k.dlq}
	waitFor(t, ctx, "three brokers", func() bool {
		bs, err := k.adm.ListBrokers(ctx)
		return err == nil && len(bs) == 3
	})

	pg := pgtest.New(t)
	_, err = pg.Pool.Exec(ctx, "CREATE TABLE effects (id text PRIMARY KEY, key text NOT NULL, seq int NOT NULL, attempt int NOT NULL, n int NOT NULL DEFAULT 1, ord bigserial)")
	require.NoError(t, err)
	st, err := pgstore.New(pg.Pool, pgstore.Config{Schema: pg.Schema, Logger: quietLog, NoPruning: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close(context.Background()) })

	url := "kafka://" + brokers + "?partitions=1&replication_factor=3&min_insync_replicas=2&tiers=" + kafkaRetryTier.String()
	b, err := adapters.Open(ctx, url, adapters.WithLogger(quietLog))
	require.NoError(t, err)
	defer func() { _ = b.Close() }()
	src, err := b.Source(ctx, source, kafkaGroup)
	require.NoError(t, err)
	k.checkDurability(t)

	var wantEffects, wantLetters int
	for i := range clusterMessages {
		if _, dead := kafkaFate(i); dead {
			wantLetters++
		} else {
			wantEffects++
		}
	}
	out := source + "-out" // the outbox's destination: one message per effect
	send, err := outbox.NewSender(pg.Schema)
	require.NoError(t, err)
	h := pgstore.HandlerFunc(func(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
		seq, err := strconv.Atoi(string(msg.Body))
		if err != nil {
			return err
		}
		retried, dead := kafkaFate(seq)
		if dead || (retried && msg.Attempt == 1) {
			return fmt.Errorf("%s fails attempt %d on purpose", msg.ID, msg.Attempt)
		}
		if _, err = tx.Exec(ctx, "INSERT INTO effects (id, key, seq, attempt) VALUES ($1, $2, $3, $4) ON CONFLICT (id) DO UPDATE SET n = effects.n + 1", msg.ID, msg.Key, seq, msg.Attempt); err != nil {
			return err
		}
		return send.Send(ctx, tx, out, &consumer.Message{ID: "o-" + msg.ID, Key: msg.Key, Body: msg.Body})
	})
	var (
		counts    sync.Map // consumer.Outcome → *atomic.Int64
		letters   sync.Map // dead-lettered IDs
		nLetters  atomic.Int64
		prod      = newClusterProducer(clusterMessages)
		resumedAt atomic.Pointer[time.Time]
		killNow   = make(chan struct{})
		killOnce  sync.Once
	)
	count := func(o consumer.Outcome) *atomic.Int64 {
		v, _ := counts.LoadOrStore(o, new(atomic.Int64))
		return v.(*atomic.Int64)
	}
	obs := &matrixObserver{settled: func(ev consumer.Event) {
		if n := count(ev.Outcome).Add(1); ev.Outcome == tc.killOn && n >= tc.killAfter {
			killOnce.Do(func() { close(killNow) })
		}
		if ev.Outcome == consumer.OutcomeDeadLettered {
			if _, dup := letters.LoadOrStore(ev.Message.ID, true); !dup {
				nLetters.Add(1)
			}
		}
		i, _ := strconv.Atoi(strings.TrimPrefix(ev.Message.ID, "m-"))
		if tc.resumedOn(ev.Outcome) && int64(i) >= prod.firstAfter.Load() && resumedAt.Load() == nil {
			now := time.Now()
			resumedAt.CompareAndSwap(nil, &now)
		}
	}, breaker: func(bool) {}}
	policy := retry.Policy{MaxAttempts: 2, InitialInterval: kafkaRetryTier, MaxInterval: kafkaRetryTier, Jitter: retry.NoJitter}
	c, err := consumer.New(src, h, consumer.Config{Name: kafkaGroup, Concurrency: 4, MaxInFlight: 32, Retry: policy, Observer: obs, Logger: quietLog}, middleware.Idempotency(st))
	require.NoError(t, err)
	runErr := make(chan error, 1)
	go func() { runErr <- c.Run(ctx) }()
	defer startClusterRelay(t, ctx, pg, b)()

	produced := prod.run(ctx, b, source, func(i int) string { return fmt.Sprintf("k%d", i%clusterKeys) }, 5*time.Second)

	var res kafkaClusterResult
	select {
	case <-killNow:
	case err := <-runErr:
		t.Fatalf("consumer stopped before the kill: %v", err)
	case <-ctx.Done():
		t.Fatalf("no kill: %d effects, %d retry copies", count(consumer.OutcomeProcessed).Load(), count(consumer.OutcomeRetried).Load())
	}
	res.killed = tc.victim(k)
	leaders := fmt.Sprintf("source %s, retry %s, dead letters %s", k.leader(t, k.source), k.leader(t, k.retry), k.leader(t, k.dlq))
	clusterNode(t, "kill", res.killed)
	now := time.Now()
	prod.kill()
	restarted := false
	t.Cleanup(func() { // a failed run leaves the cluster whole for the next test
		if !restarted {
			clusterNode(t, "restart", res.killed)
		}
	})
	t.Logf("killed %s (leaders: %s) after %d effects, %d retry and %d dead-letter copies",
		res.killed, leaders, count(consumer.OutcomeProcessed).Load(), count(consumer.OutcomeRetried).Load(), count(consumer.OutcomeDeadLettered).Load())

	require.NoError(t, <-produced)
	// With the node down, every message must be handled or dead-lettered.
	effects := func() int {
		var n int
		if err := pg.Pool.QueryRow(ctx, "SELECT count(*) FROM effects").Scan(&n); err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("counting effects: %v", err)
		}
		return n
	}
	down, downCancel := context.WithTimeout(ctx, kafkaDownDeadline)
	for effects() < wantEffects || nLetters.Load() < int64(wantLetters) {
		select {
		case <-down.Done():
			downCancel()
			t.Fatalf("with %s down for %v: %d of %d effects, %d of %d dead letters, %d retry copies, %d failed attempts held",
				res.killed, time.Since(now).Round(time.Second), effects(), wantEffects, nLetters.Load(), wantLetters,
				count(consumer.OutcomeRetried).Load(), count(consumer.OutcomeFailed).Load())
		case <-time.After(200 * time.Millisecond):
		}
	}
	downCancel()
	res.done = time.Since(now)
	require.NotNil(t, resumedAt.Load(), "progress after the kill")
	res.resume = resumedAt.Load().Sub(now)
	if p := prod.resumed.Load(); p != nil {
		res.publishStall = p.Sub(now)
	}

	clusterNode(t, "restart", res.killed)
	restarted = true
	waitFor(t, ctx, "all three replicas in sync again", k.whole)
	require.NoError(t, c.Stop(ctx))
	res.outboxLost = clusterOutgoing(t, ctx, b, out, wantEffects)

	res.effects = effects()
	res.lost = wantEffects - res.effects
	require.NoError(t, pg.Pool.QueryRow(ctx, "SELECT coalesce(sum(n - 1), 0) FROM effects").Scan(&res.duplicated))
	rows, err := pg.Pool.Query(ctx, "SELECT key, seq FROM effects WHERE attempt = 1 ORDER BY ord")
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

	stored, err := b.DeadLetters(ctx, source, kafkaGroup, 0)
	require.NoError(t, err)
	seen := map[string]bool{}
	for _, d := range stored {
		seen[d.Message.ID] = true
		res.letterCopies += d.Copies - 1
		i, _ := strconv.Atoi(strings.TrimPrefix(d.Message.ID, "m-"))
		if _, dead := kafkaFate(i); !dead {
			t.Errorf("%s dead-lettered (%s): %s", d.Message.ID, d.Reason(), d.Error())
		}
	}
	res.letters = len(seen)
	res.lettersLost = wantLetters - res.letters
	var ids []string
	letters.Range(func(id, _ any) bool { ids = append(ids, id.(string)); return true })
	require.NoError(t, pg.Pool.QueryRow(ctx, "SELECT count(*) FROM effects WHERE id = ANY($1)", ids).Scan(&res.deadWithEffect))

	t.Logf("%s killed: %d of %d effects (%d lost, %d duplicated, %d out of key order), %d of %d dead letters (%d extra copies); "+
		"%d retry copies; %d of %d outgoing messages lost; producer resumed after %v, consumer after %v, all handled %v after the kill",
		res.killed, res.effects, wantEffects, res.lost, res.duplicated, res.outOfOrder, res.letters, wantLetters, res.letterCopies,
		count(consumer.OutcomeRetried).Load(), res.outboxLost, wantEffects, res.publishStall.Round(time.Millisecond), res.resume.Round(time.Millisecond), res.done.Round(time.Millisecond))
	return res
}
