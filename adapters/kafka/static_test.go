package kafka

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/oncely/oncely/consumer"
)

// spreadParts and spreadPerPart shape the topic of the membership tests:
// every partition holds records, so a member that got only some partitions
// back cannot pass.
const (
	spreadParts   = 3
	spreadPerPart = 20
)

// publishSpread creates topic with spreadParts partitions and produces
// spreadPerPart records to each.
func publishSpread(t testing.TB, addrs []string, topic string) {
	t.Helper()
	createTopic(t, addrs, topic, spreadParts)
	cl := client(t, addrs, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var recs []*kgo.Record
	for p := range int32(spreadParts) {
		for i := range spreadPerPart {
			id := fmt.Sprintf("p%d-%02d", p, i)
			recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Key: []byte(id), Value: []byte("x"),
				Headers: []kgo.RecordHeader{{Key: consumer.HeaderMessageID, Value: []byte(id)}}})
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, cl.ProduceSync(ctx, recs...).FirstErr())
}

// seen counts deliveries per partition and offset.
type seen map[int32]map[int64]int

func (s seen) add(m *consumer.Message) {
	if s[m.Partition] == nil {
		s[m.Partition] = map[int64]int{}
	}
	s[m.Partition][m.Offset]++
}

// total is the number of distinct offsets seen.
func (s seen) total() int {
	n := 0
	for _, offs := range s {
		n += len(offs)
	}
	return n
}

// missing lists the published records not seen, as "partition/offset".
func (s seen) missing() []string {
	var out []string
	for p := range int32(spreadParts) {
		for o := range int64(spreadPerPart) {
			if s[p][o] == 0 {
				out = append(out, fmt.Sprintf("%d/%d", p, o))
			}
		}
	}
	return out
}

// receiveUntil receives and acks deliveries of src into got until done
// reports true, failing t when deadline passes first. It returns the time
// the first delivery arrived.
func receiveUntil(t testing.TB, src *Source, topic string, got seen, deadline time.Time, done func() bool) (first time.Time) {
	t.Helper()
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	for !done() {
		ds, err := src.Receive(ctx, 100)
		if errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("deadline passed with %d of %d records seen; missing %v", got.total(), spreadParts*spreadPerPart, got.missing())
		}
		require.NoError(t, err)
		for _, d := range ds {
			if first.IsZero() {
				first = time.Now()
			}
			m := d.Message()
			require.Equal(t, topic, m.Source)
			got.add(m)
			require.NoError(t, d.Ack(ctx))
		}
	}
	return first
}

// A static member (InstanceID) that dies without leaving the group or
// committing is replaced at once by its restart with the same InstanceID:
// the restart gets every partition back and every record again well within
// the session timeout, instead of waiting the dead member's session out.
func TestStaticMembershipTakeover(t *testing.T) {
	t.Parallel()
	addrs := brokers(t)
	topic := uniqueTopic("static")
	group := "static-" + topic
	publishSpread(t, addrs, topic)

	const sessionTimeout = 30 * time.Second
	cfg := Config{
		Brokers:    addrs,
		Topic:      topic,
		Group:      group,
		InstanceID: "worker-0",
		// Nothing is committed before the crash: every record must come
		// again from the restarted member.
		CommitInterval: time.Hour,
		Opts:           []kgo.Opt{kgo.SessionTimeout(sessionTimeout)},
	}

	first := newSource(t, cfg)
	t.Cleanup(first.crash)
	before := seen{}
	receiveUntil(t, first, topic, before, time.Now().Add(20*time.Second), func() bool {
		return before.total() >= spreadParts*spreadPerPart/2
	})
	first.crash()
	crashed := time.Now()

	// The crash committed nothing, and the dead member is still registered
	// (franz-go does not send LeaveGroup for a static member).
	adm := kadmClient(t, addrs)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	offs, err := adm.FetchOffsets(ctx, group)
	require.NoError(t, err)
	require.Zero(t, len(offs.Offsets()), "the crash committed offsets")
	described, err := adm.DescribeGroups(ctx, group)
	require.NoError(t, err)
	require.Len(t, described[group].Members, 1, "the dead static member left the group")

	cfg.CommitInterval = 0
	second := newSource(t, cfg)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = second.Close(ctx)
	})
	after := seen{}
	// A bound well below the session timeout: a restart that had to wait
	// for the dead member's session to expire cannot meet it.
	bound := sessionTimeout / 2
	firstRec := receiveUntil(t, second, topic, after, crashed.Add(bound), func() bool {
		return after.total() == spreadParts*spreadPerPart
	})
	all := time.Since(crashed)
	t.Logf("restart with the same InstanceID: first record %s, all %d records %s after the crash (session timeout %s)",
		firstRec.Sub(crashed).Round(time.Millisecond), spreadParts*spreadPerPart, all.Round(time.Millisecond), sessionTimeout)

	require.Empty(t, after.missing())
	for p := range int32(spreadParts) {
		require.Len(t, after[p], spreadPerPart, "partition %d", p)
	}
	for p, offs := range before {
		for o := range offs {
			require.Positive(t, after[p][o], "record %d/%d seen before the crash was not redelivered", p, o)
		}
	}

	// The restart replaced the dead member instead of joining beside it.
	ctx2, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel2()
	described, err = adm.DescribeGroups(ctx2, group)
	require.NoError(t, err)
	members := described[group].Members
	require.Len(t, members, 1)
	require.NotNil(t, members[0].InstanceID)
	require.Equal(t, cfg.InstanceID, *members[0].InstanceID)
}

// The contrast: a dynamic member that dies without leaving (its LeaveGroup
// is swallowed, as when the process is killed) holds its partitions until
// its session times out; its replacement gets nothing before then.
func TestDynamicMembershipWaitsForSession(t *testing.T) {
	t.Parallel()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.AllowAutoTopicCreation(), kfake.DefaultNumPartitions(spreadParts),
		kfake.GroupMinSessionTimeout(100*time.Millisecond))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	addrs := c.ListenAddrs()
	topic := uniqueTopic("dynamic")
	group := "dynamic-" + topic
	publishSpread(t, addrs, topic)

	const (
		sessionTimeout = 3 * time.Second
		heartbeat      = 100 * time.Millisecond
	)
	cfg := Config{
		Brokers:          addrs,
		Topic:            topic,
		Group:            group,
		CommitInterval:   time.Hour,
		RevokeTimeout:    time.Second,
		RebalanceTimeout: 5 * time.Second,
		Opts:             []kgo.Opt{kgo.SessionTimeout(sessionTimeout), kgo.HeartbeatInterval(heartbeat)},
	}
	first := newSource(t, cfg)
	t.Cleanup(first.crash)
	before := seen{}
	receiveUntil(t, first, topic, before, time.Now().Add(20*time.Second), func() bool {
		return before.total() >= spreadParts*spreadPerPart/2
	})
	swallowed := make(chan struct{})
	c.ControlKey(kmsg.LeaveGroup.Int16(), func(req kmsg.Request) (kmsg.Response, error, bool) {
		close(swallowed)
		return req.(*kmsg.LeaveGroupRequest).ResponseKind(), nil, true
	})
	first.crash()
	crashed := time.Now()
	// The control function runs before the broker answers the LeaveGroup
	// that Close waits for.
	select {
	case <-swallowed:
	default:
		t.Fatal("the dynamic member's Close sent no LeaveGroup")
	}

	cfg.CommitInterval = 0
	second := newSource(t, cfg)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = second.Close(ctx)
	})
	after := seen{}
	firstRec := receiveUntil(t, second, topic, after, crashed.Add(15*time.Second), func() bool {
		return after.total() == spreadParts*spreadPerPart
	})
	stall := firstRec.Sub(crashed)
	t.Logf("replacement without InstanceID: first record %s, all %d records %s after the crash (session timeout %s)",
		stall.Round(time.Millisecond), spreadParts*spreadPerPart, time.Since(crashed).Round(time.Millisecond), sessionTimeout)
	require.Empty(t, after.missing())
	// The broker cannot hand the partitions on before the dead member's
	// last heartbeat plus the session timeout. A lower bound only, with half
	// the session as slack for heartbeats delayed on a loaded machine; a
	// static restart (the same test with an InstanceID) takes ~0.1s.
	require.GreaterOrEqual(t, stall, sessionTimeout/2, "the replacement got records before the dead member's session expired")
}
