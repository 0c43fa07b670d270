package adapters_test

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/adapters/adaptertest"
	"github.com/oncely/oncely/adapters/kafka"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/kafkatest"
)

// TestOpenKafkaUnreachable: Open of a kafka:// URL, with a context without
// deadline, against a listener that accepts TCP connections but never
// answers, an unresolvable host and a closed port, fails with an error
// naming the address within kafka.ConnectTimeout instead of hanging.
// Catches an Open whose connection check is bounded only by its caller's
// context, or whose error does not name the address.
func TestOpenKafkaUnreachable(t *testing.T) {
	t.Parallel()
	for name, addr := range kafkatest.DeadAddrs(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			done := make(chan error, 1)
			go func() {
				b, err := adapters.Open(context.Background(), "kafka://"+addr)
				if err == nil {
					_ = b.Close()
				}
				done <- err
			}()
			hang := time.NewTimer(2 * kafka.ConnectTimeout)
			defer hang.Stop()
			select {
			case err := <-done:
				require.ErrorContains(t, err, "no Kafka broker answers at "+addr)
			case <-hang.C:
				t.Fatalf("no answer after %s: Open hangs", 2*kafka.ConnectTimeout)
			}
		})
	}
}

// suiteKafkaAdmin is an admin client of suiteKafka's brokers, closed at the
// end of t.
func suiteKafkaAdmin(t *testing.T) (url string, adm *kadm.Client) {
	t.Helper()
	url = suiteKafka(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(strings.TrimPrefix(url, "kafka://"), ",")...))
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return url, kadm.NewClient(cl)
}

// consumeOne opens a Source of a fresh source for consumer name through
// url, publishes one message and receives it; it returns Receive's error.
func consumeOne(t *testing.T, url, name string) error {
	t.Helper()
	b, err := adapters.Open(t.Context(), url, adapters.WithLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	defer func() { require.NoError(t, b.Close()) }()
	source := adaptertest.SourceName("group")
	require.NoError(t, b.Publish(t.Context(), source, &consumer.Message{ID: "1", Body: []byte("x")}))
	src, err := b.Source(t.Context(), source, name)
	require.NoError(t, err)
	defer func() { require.NoError(t, src.Close(context.Background())) }()
	ctx, cancel := context.WithTimeout(t.Context(), adaptertest.WaitTimeout)
	defer cancel()
	ds, err := src.Receive(ctx, 1)
	if err != nil {
		return err
	}
	require.Len(t, ds, 1)
	return ds[0].Ack(ctx)
}

// TestOpenKafkaGroupProtocol: group_protocol= chooses the group type the
// broker reports for the consumer's group, classic by default. Catches the
// parameter parsed but not passed to the client (the group stays classic).
func TestOpenKafkaGroupProtocol(t *testing.T) {
	t.Parallel()
	url, adm := suiteKafkaAdmin(t)
	for param, want := range map[string]string{"": "classic", "classic": "classic", "consumer": "consumer"} {
		t.Run(want+"/"+param, func(t *testing.T) {
			t.Parallel()
			name := adaptertest.SourceName("proto") // the group: unique, as groups outlive the test
			require.NoError(t, consumeOne(t, url+"?group_protocol="+param, name))
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			groups, err := adm.ListGroups(ctx)
			require.NoError(t, err)
			require.Equal(t, want, groups[name].GroupType, "group type")
		})
	}
}

// TestOpenKafkaSessionTimeout: session_timeout= reaches the group
// coordinator: a value above the broker's group.max.session.timeout.ms is
// refused by the broker when the member joins (INVALID_SESSION_TIMEOUT),
// and one within its bounds, below franz-go's 3s heartbeat interval, joins
// and consumes. Catches the parameter parsed but not passed to the client
// (the too-long session is accepted), or passed without a heartbeat
// interval below it (franz-go refuses the client).
func TestOpenKafkaSessionTimeout(t *testing.T) {
	t.Parallel()
	url, adm := suiteKafkaAdmin(t)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	bs, err := adm.ListBrokers(ctx)
	require.NoError(t, err)
	require.NotEmpty(t, bs)
	rcs, err := adm.DescribeBrokerConfigs(ctx, bs[0].NodeID)
	require.NoError(t, err)
	limits := map[string]time.Duration{}
	for _, rc := range rcs {
		for _, c := range rc.Configs {
			if c.Key == "group.min.session.timeout.ms" || c.Key == "group.max.session.timeout.ms" {
				ms, err := strconv.Atoi(c.MaybeValue())
				require.NoError(t, err, c.Key)
				limits[c.Key] = time.Duration(ms) * time.Millisecond
			}
		}
	}
	require.Len(t, limits, 2, "the broker's session timeout bounds")

	tooLong := limits["group.max.session.timeout.ms"] + time.Second
	err = consumeOne(t, url+"?session_timeout="+tooLong.String(), adaptertest.SourceName("session"))
	require.ErrorIs(t, err, kerr.InvalidSessionTimeout, "a session of %s is beyond the broker's maximum", tooLong)

	short := max(limits["group.min.session.timeout.ms"], 2*time.Second)
	require.NoError(t, consumeOne(t, url+"?session_timeout="+short.String(), adaptertest.SourceName("session")))
}

// TestOpenKafkaDurability: replication_factor= and min_insync_replicas=
// reach the topics oncely creates: the source topic Publish creates and the
// dead-letter topic the Source creates carry min.insync.replicas set on the
// topic (the single test broker's default is 1 too, so the test asks for
// the topic's own value), and replication_factor=3 on one broker fails the
// Source with kafka.ErrTopicCreation.
func TestOpenKafkaDurability(t *testing.T) {
	t.Parallel()
	url, adm := suiteKafkaAdmin(t)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	b, err := adapters.Open(ctx, url+"?replication_factor=1&min_insync_replicas=1", adapters.WithLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	defer func() { require.NoError(t, b.Close()) }()
	source, name := adaptertest.SourceName("durable"), adaptertest.SourceName("durable")
	require.NoError(t, b.Publish(ctx, source, &consumer.Message{ID: "1", Body: []byte("x")}))
	src, err := b.Source(ctx, source, name)
	require.NoError(t, err)
	require.NoError(t, src.Close(ctx))
	topics := []string{source, kafka.DeadLetterTopic(source, name)}
	configs, err := adm.DescribeTopicConfigs(ctx, topics...)
	require.NoError(t, err)
	require.Len(t, configs, len(topics))
	for _, rc := range configs {
		require.NoError(t, rc.Err, rc.Name)
		var minInsync string
		for _, c := range rc.Configs {
			if c.Key == "min.insync.replicas" && c.Value != nil && c.Source == kmsg.ConfigSourceDynamicTopicConfig {
				minInsync = *c.Value
			}
		}
		require.Equal(t, "1", minInsync, "%s: min.insync.replicas set on the topic", rc.Name)
	}

	three, err := adapters.Open(ctx, url+"?replication_factor=3", adapters.WithLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	defer func() { require.NoError(t, three.Close()) }()
	_, err = three.Source(ctx, adaptertest.SourceName("rf3"), name)
	require.ErrorIs(t, err, kafka.ErrTopicCreation)
	require.ErrorIs(t, err, kerr.InvalidReplicationFactor)
}
