package kafka

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/oncely/oncely/adapters/adaptertest"
)

var _ adaptertest.CopyFaulter = (*harness)(nil)

// FailNextCopy makes the broker refuse the op copies of source's consumer
// adaptertest.ConsumerName (adaptertest.CopyFaulter): the copy topic's
// max.message.bytes drops to one byte, so every produce to it fails with
// MESSAGE_TOO_LARGE, on kfake and on Apache Kafka alike, and nothing is
// stored. Every conformance case has topics of its own, so the limit simply
// stays until the test ends (later copies to that topic would fail too; the
// case produces none). It returns once the broker enforces the limit: a probe
// topic altered in the same request refuses a record.
//
// With RetryInPlace a retry publishes no copy, so there is nothing to refuse:
// the retry op closes the Source the harness opened last for source (the
// case's) and skips.
func (h *harness) FailNextCopy(t testing.TB, source string, op adaptertest.CopyOp) {
	t.Helper()
	cfg := h.config(source, adaptertest.ConsumerName).withDefaults()
	topic := DeadLetterTopic(source, cfg.Group)
	if op == adaptertest.CopyRetry {
		if cfg.RetryMode == RetryInPlace {
			h.closeSources(t, source)
			t.Skip("RetryInPlace publishes no retry copy: nothing for the broker to refuse")
		}
		topic = RetryTopic(source, cfg.Group, cfg.Tiers.Tier(adaptertest.RetryDelay))
	}
	probe := source + ".copyfault-probe"
	createTopics(t, h.addrs, 0, probe)
	cl := client(t, h.addrs)
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "max.message.bytes", Value: kadm.StringPtr("1")}}, topic, probe)
	require.NoError(t, err)
	for _, r := range resp {
		require.NoError(t, r.Err, "altering %s", r.Name)
	}
	for {
		err := cl.ProduceSync(ctx, &kgo.Record{Topic: probe, Value: []byte("probe")}).FirstErr()
		if errors.Is(err, kerr.MessageTooLarge) {
			return
		}
		require.NoError(t, ctx.Err(), "the broker did not enforce max.message.bytes in time (last produce: %v)", err)
		time.Sleep(20 * time.Millisecond)
	}
}

// harnessSources are the Sources each harness opened, by source name, so
// FailNextCopy can close them before skipping.
var harnessSources sync.Map // harnessSource → *Source (the last one opened)

type harnessSource struct {
	h      *harness
	source string
}

// track records s, opened by h for source.
func (h *harness) track(source string, s *Source) {
	harnessSources.Store(harnessSource{h, source}, s)
}

// closeSources closes the Source h opened last for source, if any.
func (h *harness) closeSources(t testing.TB, source string) {
	t.Helper()
	if v, ok := harnessSources.LoadAndDelete(harnessSource{h, source}); ok {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		require.NoError(t, v.(*Source).Close(ctx))
	}
}

// namedSource is a Source the harness opened for the suite's consumer name
// under a consumer group of its own (h.group: groups outlive a test on a
// real broker, and the conformance tests run in parallel), so it reports the
// name the suite runs its Consumers under (consumer.ConsumerNamer). Its
// retry and dead-letter topics are named by the group, as h.DeadLetters
// reads them.
type namedSource struct {
	*Source
	name string
}

func (n namedSource) ConsumerName() string { return n.name }
