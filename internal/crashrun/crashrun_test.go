package crashrun_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/internal/crashrun"
	"github.com/oncely/oncely/internal/envtest"
	"github.com/oncely/oncely/internal/kafkatest"
)

var (
	buildOnce sync.Once
	bins      crashrun.Binaries
	buildErr  error
	binDir    string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

func binaries(t *testing.T) crashrun.Binaries {
	t.Helper()
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "oncely-crashtest-test-")
		if buildErr == nil {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			bins, buildErr = crashrun.Build(ctx, binDir)
		}
	})
	require.NoError(t, buildErr)
	return bins
}

// crash runs kills kills with dedupe against url and requires no lost and no
// duplicated effect, every round's payments applied within the round
// timeout after the restart, every timed kill within its window, every
// aimed kill and three in ten of all kills mid-stream, and every poison
// payment dead-lettered. Options change the run's Config (such as its kill
// window or its instances).
func crash(t *testing.T, name, url string, batch, kills int, options ...func(*crashrun.Config)) crashrun.Result {
	dbURL := envtest.Postgres(t)
	b := binaries(t)
	ctx, cancel := context.WithTimeout(context.Background(), 240*time.Second)
	defer cancel()
	logDir := t.TempDir()
	cfg := crashrun.Config{
		Name: name, BrokerURL: url, DatabaseURL: dbURL, Ledger: b.Ledger, Dedupe: true, Kills: kills, Batch: batch, LogDir: logDir,
		Progress: t.Logf, MinKill: crashrun.MinKillDefault, MaxKill: crashrun.MaxKillDefault,
	}
	for _, o := range options {
		o(&cfg)
	}
	res, err := run(ctx, t, cfg, func(res crashrun.Result) bool { return res.Lost() > 0 || res.Duplicated() > 0 })
	require.NoError(t, err)
	require.Len(t, res.Kills, kills)
	for i, k := range res.Kills {
		if k.Aimed {
			continue
		}
		require.GreaterOrEqual(t, k.After, cfg.MinKill, "kill %d", i)
		require.LessOrEqual(t, k.After, cfg.MaxKill, "kill %d", i)
	}
	require.Equal(t, res.AimedKills(), res.AimedMidStream(), "every aimed kill must land while a batch is being worked on")
	require.Equal(t, kills*(batch-1), res.Messages)
	require.Zero(t, res.Lost(), "payments lost with dedupe")
	require.Zero(t, res.Duplicated(), "payments applied twice with dedupe")
	require.Zero(t, res.BadExits, "every SIGTERM ends the ledger with exit 0: %s", strings.Join(res.BadExitLogs, "\n"))
	require.Equal(t, res.Poison, res.PoisonDeadLettered, "every poison payment ends in the dead-letter destination")
	require.GreaterOrEqual(t, res.MidStream(), max(1, kills*3/10), "kills must land while a batch is being worked on")
	return res
}

// run runs cfg, logs the result's table and, when the run failed or bad
// reports a broken guarantee, the processes' logs.
func run(ctx context.Context, t *testing.T, cfg crashrun.Config, bad func(crashrun.Result) bool) (crashrun.Result, error) {
	res, err := crashrun.Run(ctx, cfg)
	var table strings.Builder
	_ = crashrun.WriteTable(&table, []crashrun.Result{res})
	t.Logf("\n%s", table.String())
	if err != nil || bad(res) {
		dumpLogs(t, cfg.LogDir)
	}
	return res, err
}

func dumpLogs(t *testing.T, dir string) {
	files, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		if len(b) > 4000 {
			b = b[len(b)-4000:]
		}
		t.Logf("--- %s\n%s", filepath.Base(f), b)
	}
}

func TestCrashRabbitMQ(t *testing.T) {
	t.Parallel()
	crash(t, "rabbitmq", envtest.RabbitMQ(t), 200, 10)
}

func TestCrashSQS(t *testing.T) {
	t.Parallel()
	// The emulator takes fewer messages a second: smaller batches keep the
	// kills mid-stream and the run within about 90s.
	crash(t, "sqs", "sqs://us-east-1?endpoint="+envtest.SQS(t)+"&visibility_timeout=5s&wait=1", 100, 10)
}

func TestCrashRedis(t *testing.T) {
	t.Parallel()
	// A killed ledger's entries stay pending with its consumer until the
	// lease ends: a short lease keeps each round within seconds.
	crash(t, "redis", envtest.Redis(t)+"?lease=2s", 200, 10)
}

func TestCrashKafka(t *testing.T) {
	t.Parallel()
	envtest.Postgres(t)
	b := binaries(t)
	k, err := crashrun.StartKafka(context.Background(), b.Oncely, filepath.Join(t.TempDir(), "kafka.log"))
	require.NoError(t, err)
	t.Cleanup(k.Stop)
	crash(t, "kafka", k.URL+"?instance_id=ledger-crashtest", 200, 10)
}

// batchMode runs the ledger with -batch size at the given concurrency: its
// batch handler applies payments size at a time with set-based SQL in the
// claim's transaction, and waits delay once per batch, inside the
// transaction, so most kills land while batches hold uncommitted claims. A
// round of n payments so lasts about n/size/concurrency × delay.
func batchMode(size, concurrency int, delay time.Duration) func(*crashrun.Config) {
	return func(c *crashrun.Config) {
		c.HandlerBatch, c.Concurrency, c.HandlerDelay = size, concurrency, delay
	}
}

// TestCrashRabbitMQBatch is TestCrashRabbitMQ with the ledger's batch
// handler: a kill lands while batches are in their transactions, between
// a batch's commit and its acks, or among a batch's acks.
//
// Bug caught: a batch acked before its transaction committed (payments
// lost), or a batch whose commit is not seen as its claims by the restart
// (payments applied twice); a bisection or a named failure (the poison
// payment) that acks or drops its batch-mates.
func TestCrashRabbitMQBatch(t *testing.T) {
	t.Parallel()
	crash(t, "rabbitmq-batch", envtest.RabbitMQ(t), 200, 10, batchMode(10, 4, 500*time.Millisecond))
}

// TestCrashSQSBatch is TestCrashSQS with the ledger's batch handler: a
// batch's acks are coalesced into DeleteMessageBatch requests, so a kill can
// land with some of a committed batch deleted and the others visible again
// after their visibility timeout.
//
// A kill leaves the messages it held invisible until their visibility
// timeout ends, so each round waits one out: 3 s (TestCrashSQS has 5 s) keeps
// the run within about 70 s, and the adapter renews the visibility of the
// deliveries a batch holds at 70 % of it, 2.1 s, shorter than a batch waits
// in the window.
//
// Bug caught: a batch's deletes sent before its transaction committed
// (payments lost); redelivered members of a committed batch applied again
// (duplicates); a batch whose messages' visibility lapses while it runs,
// so that a copy is applied beside it.
func TestCrashSQSBatch(t *testing.T) {
	t.Parallel()
	crash(t, "sqs-batch", "sqs://us-east-1?endpoint="+envtest.SQS(t)+"&visibility_timeout=3s&wait=1", 100, 10, batchMode(10, 2, 500*time.Millisecond))
}

// TestCrashRedisBatch is TestCrashRedis with the ledger's batch handler: a
// batch's XACKs follow its commit, and what a killed ledger held stays
// pending with its consumer until the 2 s lease ends and the restart
// reclaims it.
//
// Bug caught: a batch acknowledged before its transaction committed
// (payments lost); reclaimed members of a committed batch applied again
// (duplicates); a batch whose entries' idle time is not renewed while it
// runs, so that another consumer reclaims and applies them beside it.
func TestCrashRedisBatch(t *testing.T) {
	t.Parallel()
	crash(t, "redis-batch", envtest.Redis(t)+"?lease=2s", 200, 10, batchMode(10, 4, 500*time.Millisecond))
}

// TestCrashKafkaBatch is TestCrashKafka with the ledger's batch handler, on
// a dev cluster of its own (TestCrashKafka's group runs at the same time):
// Kafka acks are offset commits, so a kill can land with a batch committed
// in Postgres and its offsets not, or with a later batch's offsets
// committed past an earlier one still running.
//
// Bug caught: an offset committed past a batch whose transaction had not
// committed (payments lost); a committed batch redelivered after the
// restart and applied again (duplicates).
func TestCrashKafkaBatch(t *testing.T) {
	t.Parallel()
	envtest.Postgres(t)
	b := binaries(t)
	k, err := crashrun.StartKafka(context.Background(), b.Oncely, filepath.Join(t.TempDir(), "kafka.log"))
	require.NoError(t, err)
	t.Cleanup(k.Stop)
	crash(t, "kafka-batch", k.URL+"?instance_id=ledger-crashtest", 200, 10, batchMode(10, 4, 250*time.Millisecond))
}

// TestCrashKafkaReal crash-tests the ledger on the Apache Kafka in
// KAFKA_BROKERS (scripts/test.sh starts one; required under CI=true): first
// with the URL as the README shows it (dynamic membership: a killed member
// holds its partitions until its session times out, so fewer kills), then
// with static membership (instance_id), whose restart takes the partitions
// back at once, and last with static membership and the batch handler. Dynamic runs first: a static member that stopped stays in
// the group "ledger" until its session times out and would hold up the
// dynamic run's first join.
func TestCrashKafkaReal(t *testing.T) {
	t.Parallel()
	if !kafkatest.Real() {
		envtest.Missing(t, "Kafka ("+kafkatest.Env+")", errors.New("not set"))
		return
	}
	url := "kafka://" + strings.Join(kafkatest.Brokers(t), ",")
	var dynamic, static crashrun.Result
	// Three kills only (each waits out a session), so each must land
	// mid-stream: rounds 1–3 are aimed (see crashrun.Config.TimedEvery), at
	// a batch twice the usual size.
	if !t.Run("dynamic", func(t *testing.T) { dynamic = crash(t, "kafka-dynamic", url, 400, 3) }) {
		return
	}
	t.Run("static", func(t *testing.T) {
		static = crash(t, "kafka-static", url+"?instance_id=ledger-crashtest", 200, 10)
		_, dynWorst := dynamic.Resume()
		_, staticWorst := static.Resume()
		// A static restart replaces the dead member at once; a dynamic one
		// waits for the dead member's session (45s by default) to expire.
		require.Less(t, staticWorst, 15*time.Second, "a static restart waited for the dead member's session")
		// No longer than the session (franz-go's 45 s) plus a rebalance: a
		// user must not wait minutes after a crash.
		require.Less(t, dynWorst, 60*time.Second, "a dynamic restart waited longer than the dead member's session")
		t.Logf("from SIGKILL to the next effect: static at most %s, dynamic at most %s", staticWorst, dynWorst)
	})
	// The batch handler, as TestCrashKafkaBatch runs it on the dev cluster,
	// with static membership (the same instance: the static run's member
	// has stopped, and this one replaces it at once). Bug caught: offsets
	// committed past a batch whose transaction had not committed, or a
	// committed batch applied again after the restart, on Apache Kafka's
	// own group coordinator and fetch sizes rather than kfake's.
	t.Run("static-batch", func(t *testing.T) {
		// Apache Kafka spreads a round over more batches at once than the dev
		// cluster (about 150 payments a second at 250ms a batch): 500ms
		// keeps the round working for about 2.5 s.
		res := crash(t, "kafka-static-batch", url+"?instance_id=ledger-crashtest", 200, 10, batchMode(10, 4, 500*time.Millisecond))
		_, worst := res.Resume()
		require.Less(t, worst, 15*time.Second, "a static restart waited for the dead member's session")
	})
}

func TestConfigErrors(t *testing.T) {
	_, err := crashrun.Run(context.Background(), crashrun.Config{BrokerURL: "mem://", Kills: -1})
	require.ErrorContains(t, err, "mem:// lives inside the ledger process")
	require.ErrorContains(t, err, "DatabaseURL is required")
	require.ErrorContains(t, err, "the Ledger field (the built examples/ledger binary) is required")
	require.ErrorContains(t, err, "the Kills, Batch, Concurrency and Accounts fields must be >= 1")
	_, err = crashrun.Run(context.Background(), crashrun.Config{BrokerURL: "amqp://127.0.0.1", DatabaseURL: "postgres://127.0.0.1", Ledger: "ledger", HandlerBatch: -1})
	require.ErrorContains(t, err, "the HandlerBatch field must be >= 0, got -1")
	_, err = crashrun.Run(context.Background(), crashrun.Config{BrokerURL: "amqp://127.0.0.1", DatabaseURL: "postgres://127.0.0.1", Ledger: "ledger", Instances: -1, TimedEvery: -2})
	require.ErrorContains(t, err, "the Instances and TimedEvery fields must be >= 0 (0: the default), got -1 and -2")
	_, err = crashrun.Run(context.Background(), crashrun.Config{BrokerURL: "amqp://127.0.0.1", DatabaseURL: "postgres://127.0.0.1", Ledger: "ledger", HandlerBatch: 10})
	require.ErrorContains(t, err, "the HandlerBatch field needs Dedupe")
}

func TestWriteTable(t *testing.T) {
	var b strings.Builder
	res := crashrun.Result{Broker: "kafka", Instances: 3, Dedupe: false, Messages: 398, Poison: 2, PoisonDeadLettered: 2, Elapsed: 12 * time.Second,
		Kills: []crashrun.Kill{{After: time.Second, Aimed: true, Target: 40, DoneBefore: 50, Duplicated: 12, Resumed: 2468 * time.Millisecond}, {After: 2 * time.Second, DoneBefore: 0}}}
	require.NoError(t, crashrun.WriteTable(&b, []crashrun.Result{res}))
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	require.Len(t, lines, 2)
	require.Equal(t, strings.Fields("broker instances dedupe kills mid-stream aimed mid-stream kills with loss kills with duplicates worst kill lost duplicated messages poison in DLQ unclean exits resume median resume max time"), strings.Fields(lines[0]))
	require.Equal(t, strings.Fields("kafka 3 false 2 1 1 of 1 0 of 2 1 of 2 12 twice 0 12 398 2 of 2 0 2.5s 2.5s 12s"), strings.Fields(lines[1]))
	require.Equal(t, 1, res.KillsWithDuplicates())
	require.Equal(t, 0, res.KillsWithLoss())
}

func TestEndToEndConfigErrors(t *testing.T) {
	_, err := crashrun.Run(context.Background(), crashrun.Config{BrokerURL: "amqp://127.0.0.1", DatabaseURL: "postgres://127.0.0.1", Ledger: "ledger", EndToEnd: true})
	require.ErrorContains(t, err, "the EndToEnd field needs the Oncely field")
	require.ErrorContains(t, err, "the EndToEnd field needs Dedupe")
}

func TestWriteTableEndToEnd(t *testing.T) {
	var b strings.Builder
	res := crashrun.Result{Broker: "sqs", Dedupe: true, EndToEnd: true, Messages: 120, Accounts: 10, EventsOutOfOrder: 3, Kills: []crashrun.Kill{
		{After: time.Second, EventsLost: 2, Relay: crashrun.RelayKill{Mode: crashrun.RelayInMark, Waited: true, Unmarked: 4}},
		{After: time.Second, EventsTwice: 1, Relay: crashrun.RelayKill{Mode: crashrun.RelayAfterMark, Waited: true}},
	}}
	require.NoError(t, crashrun.WriteTable(&b, []crashrun.Result{res}))
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	require.Len(t, lines, 5)
	require.Equal(t, strings.Fields("broker relay kills mid-round in mark after mark events lost events twice out of order accounts accounts mismatched payments"), strings.Fields(lines[3]))
	require.Equal(t, strings.Fields("sqs 2 1 1 1 2 1 3 10 0 120"), strings.Fields(lines[4]))
}
