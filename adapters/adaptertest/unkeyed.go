package adaptertest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/oncely/oncely/consumer"
)

// testUnkeyedOrder: messages without a key, under the default Ordering
// (OrderByKey) with eight workers, are handled one at a time per partition
// (per source when unpartitioned) in publish order, each once, with an
// empty Key: consumer.Ordering's rule for unkeyed messages, which needs
// the adapter to hand them out in order and not to invent keys for them. A
// broker with no order (Capabilities().NoOrder: SQS standard queues) can
// only have each handled once; the case logs why it checks no more.
func testUnkeyedOrder(t *testing.T, h Harness) {
	const n = 60
	name := SourceName("unkeyed")
	msgs := make([]*consumer.Message, n)
	for i := range msgs {
		msgs[i] = msg(fmt.Sprintf("unkeyed-%03d", i), "", strconv.Itoa(i))
	}
	h.Publish(t, name, msgs...)

	src := h.NewSource(t, name, ConsumerName)
	caps := src.Capabilities()
	var mu sync.Mutex
	running := map[int32]int{} // partition → handlers running
	seqs := map[int32][]int{}  // partition → bodies in handling order
	times := map[string]int{}
	var errs []string
	stop := run(t, src, consumer.HandlerFunc(func(ctx context.Context, m *consumer.Message) error {
		seq, err := strconv.Atoi(string(m.Body))
		if err != nil {
			return consumer.Permanent(err)
		}
		mu.Lock()
		running[m.Partition]++
		if running[m.Partition] > 1 && !caps.NoOrder {
			errs = append(errs, fmt.Sprintf("%s ran while another unkeyed message of partition %d ran", m.ID, m.Partition))
		}
		if m.Key != "" && !caps.NoOrder {
			errs = append(errs, fmt.Sprintf("%s was published without a key and has Key %q", m.ID, m.Key))
		}
		mu.Unlock()
		time.Sleep(time.Duration(rand.IntN(2000)) * time.Microsecond)
		mu.Lock()
		defer mu.Unlock()
		running[m.Partition]--
		seqs[m.Partition] = append(seqs[m.Partition], seq)
		times[m.ID]++
		return nil
	}), consumer.Config{Concurrency: 8})
	waitFor(t, "every unkeyed message", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(times) >= n
	})
	stop()

	mu.Lock()
	defer mu.Unlock()
	for id, k := range times {
		if k != 1 {
			t.Errorf("%s handled %d times, want 1", id, k)
		}
	}
	if caps.NoOrder {
		t.Logf("%s keeps no order (Capabilities.NoOrder): unkeyed messages are only checked to be handled once", caps.Broker)
		return
	}
	for _, e := range errs {
		t.Error(e)
	}
	for p, got := range seqs {
		for i := 1; i < len(got); i++ {
			if got[i] < got[i-1] {
				t.Errorf("partition %d handled unkeyed messages in order %v, want publish order", p, got)
				break
			}
		}
	}
}
