package crashrun_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/internal/crashrun"
	"github.com/oncely/oncely/internal/envtest"
)

// endToEnd runs the end-to-end crash test (crashrun.Config.EndToEnd) with
// 10 kills of the ledger and 10 of the relay against url: payments →
// ledger (claims + outbox) → `oncely relay` → broker → a downstream
// consumer with claims of its own. A round has 60 good payments to 10
// accounts, applied at 2 × 60 ms, so the ledger and the relay are both at
// work for about two seconds, the kill window.
//
// It requires every payment to have exactly one ledger effect and exactly
// one downstream row, every account's downstream rows to carry seq 1, 2, 3,
// … in the order they were applied, every poison payment dead-lettered,
// every SIGTERM to exit 0, and half the relay kills at least to have landed
// mid-round (events confirmed by the broker, not marked).
//
// Bugs caught (each made once on purpose, see docs/reliability.md): the
// relay marking before it publishes (events lost), the downstream without
// claims (events twice), a key's rows published in reverse (out of order),
// events sent without a key (out of order), an event sent outside the
// payment's transaction (events lost or twice).
func endToEnd(t *testing.T, name, url string, options ...func(*crashrun.Config)) crashrun.Result {
	dbURL := envtest.Postgres(t)
	b := binaries(t)
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	logDir := t.TempDir()
	const kills, batch = 10, 61
	cfg := crashrun.Config{
		Name: name, BrokerURL: url, DatabaseURL: dbURL, Ledger: b.Ledger, Oncely: b.Oncely, EndToEnd: true, Dedupe: true,
		Kills: kills, Batch: batch, Accounts: 10, Concurrency: 2, HandlerDelay: 60 * time.Millisecond,
		MinKill: crashrun.MinKillDefault, MaxKill: 2 * time.Second, LogDir: logDir, Progress: t.Logf,
	}
	for _, o := range options {
		o(&cfg)
	}
	res, err := run(ctx, t, cfg, func(res crashrun.Result) bool {
		return res.Lost()+res.Duplicated()+res.EventsLost()+res.EventsTwice()+res.EventsOutOfOrder+res.AccountsMismatched > 0
	})
	require.NoError(t, err)
	require.Len(t, res.Kills, kills)
	require.Equal(t, kills*(batch-1), res.Messages)
	require.Zero(t, res.Lost(), "payments lost")
	require.Zero(t, res.Duplicated(), "payments applied twice")
	require.Zero(t, res.EventsLost(), "payments without a downstream event")
	require.Zero(t, res.EventsTwice(), "events applied twice downstream")
	require.Zero(t, res.EventsOutOfOrder, "downstream rows out of per-account seq order")
	require.Zero(t, res.AccountsMismatched, "accounts whose downstream rows do not number their ledger entries")
	require.Equal(t, cfg.Accounts, res.Accounts)
	require.Zero(t, res.BadExits, "every SIGTERM ends the ledger and the relay with exit 0: %s", strings.Join(res.BadExitLogs, "\n"))
	require.Equal(t, res.Poison, res.PoisonDeadLettered, "every poison payment ends in the dead-letter destination")
	require.GreaterOrEqual(t, res.RelayMidRound(), kills/2, "relay kills must land between a publish and its mark")
	return res
}

func TestEndToEndRabbitMQ(t *testing.T) {
	t.Parallel()
	endToEnd(t, "rabbitmq", envtest.RabbitMQ(t))
}

// TestEndToEndRabbitMQBatch is TestEndToEndRabbitMQ with the ledger's batch
// handler: a batch's events are sent in the batch's transaction, each
// payment's under its own cause.
func TestEndToEndRabbitMQBatch(t *testing.T) {
	t.Parallel()
	endToEnd(t, "rabbitmq-batch", envtest.RabbitMQ(t), batchMode(10, 2, 500*time.Millisecond))
}

// TestEndToEndKafka runs on a dev cluster of its own, as TestCrashKafka:
// an account's events share a partition, which the downstream's lanes keep
// in order.
func TestEndToEndKafka(t *testing.T) {
	t.Parallel()
	envtest.Postgres(t)
	b := binaries(t)
	k, err := crashrun.StartKafka(context.Background(), b.Oncely, filepath.Join(t.TempDir(), "kafka.log"))
	require.NoError(t, err)
	t.Cleanup(k.Stop)
	endToEnd(t, "kafka", k.URL+"?instance_id=ledger-crashtest")
}

// TestEndToEndSQS sends the events to a FIFO queue (MessageGroupId = the
// account): a standard queue has no order to keep. The FIFO queue also
// drops a re-published event within its deduplication window, before the
// downstream's claims see it.
func TestEndToEndSQS(t *testing.T) {
	t.Parallel()
	endToEnd(t, "sqs", "sqs://us-east-1?endpoint="+envtest.SQS(t)+"&visibility_timeout=3s&wait=1")
}

func TestEndToEndNATS(t *testing.T) {
	t.Parallel()
	endToEnd(t, "nats", envtest.NATS(t)+"?ack_wait=5s")
}

func TestEndToEndRedis(t *testing.T) {
	t.Parallel()
	endToEnd(t, "redis", envtest.Redis(t)+"?lease=2s")
}
