package kafka

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// newFake starts an in-process kfake cluster (one broker, 127.0.0.1),
// closed at the end of t, for tests that steer the broker with control
// hooks.
func newFake(t testing.TB, opts ...kfake.Opt) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1), kfake.AllowAutoTopicCreation(), kfake.DefaultNumPartitions(1)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// produceFaults makes a kfake cluster refuse, with a non-retriable error,
// every produce request that writes to one of the armed topics (the whole
// request). Other requests are handled as usual.
type produceFaults struct {
	c      *kfake.Cluster
	addrs  []string
	mu     sync.Mutex
	names  map[string]bool
	ids    map[[16]byte]bool
	failed atomic.Int64 // requests refused
}

// faultProduce installs the hook on c, unarmed.
func faultProduce(t testing.TB, c *kfake.Cluster) *produceFaults {
	f := &produceFaults{c: c, addrs: c.ListenAddrs(), names: map[string]bool{}, ids: map[[16]byte]bool{}}
	c.ControlKey(int16(kmsg.Produce), f.control)
	return f
}

// fail arms the hook for topics (which must exist).
func (f *produceFaults) fail(t testing.TB, topics ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	md, err := kadmClient(t, f.addrs).ListTopics(ctx, topics...)
	require.NoError(t, err)
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, name := range topics {
		d, ok := md[name]
		require.True(t, ok && d.Err == nil, "topic %s", name)
		f.names[name] = true
		f.ids[d.ID] = true
	}
}

// heal disarms the hook.
func (f *produceFaults) heal() {
	f.mu.Lock()
	defer f.mu.Unlock()
	clear(f.names)
	clear(f.ids)
}

func (f *produceFaults) control(kreq kmsg.Request) (kmsg.Response, error, bool) {
	f.c.KeepControl()
	req := kreq.(*kmsg.ProduceRequest)
	f.mu.Lock()
	hit := false
	for _, rt := range req.Topics {
		if f.names[rt.Topic] || (rt.TopicID != [16]byte{} && f.ids[rt.TopicID]) {
			hit = true
		}
	}
	f.mu.Unlock()
	if !hit {
		return nil, nil, false
	}
	f.failed.Add(1)
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	resp.Version = req.Version
	for _, rt := range req.Topics {
		st := kmsg.NewProduceResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		for _, rp := range rt.Partitions {
			sp := kmsg.NewProduceResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.ErrorCode = kerr.InvalidRecord.Code
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil, true
}
