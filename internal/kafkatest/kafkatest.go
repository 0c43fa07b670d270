// Package kafkatest chooses the Kafka that integration tests run against: the
// Apache Kafka named by KAFKA_BROKERS (scripts/test.sh starts one), or, outside
// CI when it is unset, an in-process kfake cluster.
//
// The real broker keeps topics, groups and committed offsets across tests and
// runs, and does not create topics on first use: tests name their topics and
// groups uniquely and create the topics they produce to before their Source
// does (CreateTopic).
package kafkatest

import (
	"context"
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/oncely/oncely/internal/envtest"
)

// Env is the variable naming the brokers: comma-separated host:port.
const Env = "KAFKA_BROKERS"

// Real reports whether Env names a real broker for this run.
func Real() bool { return os.Getenv(Env) != "" }

// Brokers returns the addresses of the Kafka a test runs against: the brokers
// in KAFKA_BROKERS once the first accepts TCP connections, or, when it is
// unset and CI is not "true", a fresh kfake cluster built with opts (and
// without automatic topic creation, as on the real test broker), closed at the
// end of t. Under CI=true an unset or unreachable KAFKA_BROKERS fails t; an
// unreachable one skips t elsewhere.
func Brokers(t testing.TB, opts ...kfake.Opt) []string {
	t.Helper()
	raw := os.Getenv(Env)
	if raw == "" {
		if envtest.CI() {
			t.Fatalf("%s is not set: the Kafka integration tests need a real broker under CI=true; run ./scripts/test.sh, which starts one", Env)
		}
		c, err := kfake.NewCluster(opts...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return c.ListenAddrs()
	}
	addrs := strings.Split(raw, ",")
	conn, err := net.DialTimeout("tcp", addrs[0], 2*time.Second)
	if err != nil {
		envtest.Missing(t, "Kafka at "+Env+"="+raw, err)
		return nil
	}
	_ = conn.Close()
	return addrs
}

// CreateTopic creates topic with the given number of partitions and the
// broker's default replication factor; a topic that already exists is left
// as it is.
func CreateTopic(t testing.TB, addrs []string, topic string, partitions int32) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, -1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		t.Fatalf("creating topic %s: %v", topic, err)
	}
	// Apache Kafka answers CreateTopics before every partition has a leader
	// in its metadata; a produce in that window fails with
	// UNKNOWN_TOPIC_OR_PARTITION once franz-go's retries for unknown topics
	// run out. Wait until the metadata shows every partition led.
	adm := kadm.NewClient(cl)
	for {
		if err := topicLed(ctx, adm, topic); err == nil {
			return
		} else if ctx.Err() != nil {
			t.Fatalf("topic %s created but not ready within 30s: %v", topic, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// topicLed reports whether the metadata shows topic with every partition
// led.
func topicLed(ctx context.Context, adm *kadm.Client, topic string) error {
	details, err := adm.ListTopics(ctx, topic)
	if err != nil {
		return err
	}
	d, ok := details[topic]
	switch {
	case !ok:
		return errors.New("not in the metadata")
	case d.Err != nil:
		return d.Err
	case len(d.Partitions) == 0:
		return errors.New("no partitions yet")
	}
	for _, p := range d.Partitions {
		if p.Err != nil {
			return p.Err
		}
		if p.Leader < 0 {
			return errors.New("a partition has no leader")
		}
	}
	return nil
}
