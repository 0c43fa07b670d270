package crashrun_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/internal/crashrun"
	"github.com/oncely/oncely/internal/envtest"
)

// The three-instance crash tests run three ledger processes of the same
// consumer per round, started together (replicas of one deployment), and
// SIGKILL one, two or all three of them at once (rounds 1, 4, 7, 10: one;
// 2, 5, 8: two; 3, 6, 9: three), starting the killed ones again at once
// while the others work on. Each instance runs at concurrency 2, so a
// round's 199 good payments take the three about 1.3 s; three kills in four
// are aimed (at 1 to 80 % of the round's effects), the fourth timed
// (0.3–3 s after the start).
// crash requires what it requires of one instance: no payment lost or
// applied twice, every round done within the round timeout (30 s), every aimed
// kill mid-stream, every poison payment dead-lettered, every SIGTERM exit 0.
//
// Bugs caught: a delivery acked (deleted, committed) before its transaction
// committed, now on any of the three; one instance's kill or restart
// losing or repeating its peers' work (a rebalance committing offsets past
// another member's uncommitted work; a reclaim or redelivery applied while
// the first copy is still running elsewhere, beside it rather than blocked
// by its claim); instances started together racing on the topology and
// the store's migrations.

// instances runs the ledger as three instances at concurrency 2, and
// bounds each round: its payments must all have an effect within 30 s of
// the restart (each broker's lease here is 3 s at most).
func instances(c *crashrun.Config) {
	c.Instances, c.Concurrency, c.RoundTimeout = 3, 2, 30*time.Second
}

// TestCrashRabbitMQInstances runs three competing consumers on one quorum
// queue, each with prefetch 20, so that every instance holds unacked
// deliveries when a kill lands (with the default prefetch the first
// consumer could take a whole round).
func TestCrashRabbitMQInstances(t *testing.T) {
	t.Parallel()
	crash(t, "rabbitmq-x3", envtest.RabbitMQ(t)+"?prefetch=20", 200, 10, instances)
}

// TestCrashSQSInstances runs three competing consumers on one queue:
// messages a killed instance received stay invisible for the 3 s
// visibility timeout, then go to whichever instance receives first. Eight
// kills (each round waits out a visibility timeout) keep it within a
// minute.
func TestCrashSQSInstances(t *testing.T) {
	t.Parallel()
	crash(t, "sqs-x3", "sqs://us-east-1?endpoint="+envtest.SQS(t)+"&visibility_timeout=3s&wait=1", 100, 8, instances)
}

// TestCrashRedisInstances runs three consumers of one group (each its own
// Redis consumer name): a killed instance's pending entries are reclaimed
// by the others, or by its restart, once the 2 s lease ends.
func TestCrashRedisInstances(t *testing.T) {
	t.Parallel()
	crash(t, "redis-x3", envtest.Redis(t)+"?lease=2s", 200, 10, instances)
}

// TestCrashNATSInstances runs three pullers of one durable consumer: what a
// killed instance held comes back to any of them after AckWait (3 s).
// Eight kills (each round waits out an AckWait) keep it within a minute.
func TestCrashNATSInstances(t *testing.T) {
	t.Parallel()
	crash(t, "nats-x3", envtest.NATS(t)+"?ack_wait=3s", 200, 8, instances)
}

// TestCrashKafkaInstances runs three static members of one group (instance
// IDs ledger-crashtest-0, -1, -2) on a dev cluster of its own, six
// partitions: a kill hands nothing over until the member's restart, which
// takes its partitions back; killing two or three at once makes their
// restarts join together.
func TestCrashKafkaInstances(t *testing.T) {
	t.Parallel()
	envtest.Postgres(t)
	b := binaries(t)
	k, err := crashrun.StartKafka(context.Background(), b.Oncely, filepath.Join(t.TempDir(), "kafka.log"))
	require.NoError(t, err)
	t.Cleanup(k.Stop)
	crash(t, "kafka-x3", k.URL+"?instance_id=ledger-crashtest", 200, 10, instances)
}
