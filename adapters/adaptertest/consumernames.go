package adaptertest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/oncely/oncely/consumer"
)

// OtherConsumerName is the second consumer name of the ConsumerNames case.
const OtherConsumerName = ConsumerName + "-other"

// testConsumerNames: two consumer names on one source get what the adapter's
// Capabilities().FanOut declares: with FanOut each name gets every message
// once; without, the names split the messages, each delivered to exactly one
// of them once.
func testConsumerNames(t *testing.T, h Harness) {
	const n = 20
	name := SourceName("names")
	srcs := []consumer.Source{h.NewSource(t, name, ConsumerName), h.NewSource(t, name, OtherConsumerName)}
	fanOut := srcs[0].Capabilities().FanOut
	if other := srcs[1].Capabilities().FanOut; other != fanOut {
		t.Fatalf("Capabilities().FanOut is %v for %s and %v for %s", fanOut, ConsumerName, other, OtherConsumerName)
	}
	msgs := make([]*consumer.Message, n)
	for i := range msgs {
		msgs[i] = msg(fmt.Sprintf("names-%02d", i), fmt.Sprintf("k%d", i%4), "b")
	}
	h.Publish(t, name, msgs...)

	var mu sync.Mutex
	got := []map[string]int{{}, {}}
	done := func() bool {
		mu.Lock()
		defer mu.Unlock()
		if fanOut {
			return len(got[0]) == n && len(got[1]) == n
		}
		return len(got[0])+len(got[1]) >= n
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, len(srcs))
	fail := func(i int, err error) {
		mu.Lock()
		defer mu.Unlock()
		errs[i] = err
	}
	for i, src := range srcs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				ds, err := src.Receive(ctx, n)
				for _, d := range ds {
					mu.Lock()
					got[i][d.Message().ID]++
					mu.Unlock()
					if err := d.Ack(ctx); err != nil && ctx.Err() == nil {
						fail(i, fmt.Errorf("ack %s: %w", d.Message().ID, err))
						return
					}
				}
				if err != nil && ctx.Err() == nil {
					fail(i, err)
					return
				}
			}
		}()
	}
	// Keep receiving for QuietWindow once everything came, to see duplicates;
	// on timeout, report what each name got.
	for deadline := time.Now().Add(WaitTimeout); !done(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Errorf("timed out after %s waiting for every message to reach the consumer names", WaitTimeout)
			break
		}
	}
	time.Sleep(QuietWindow)
	cancel()
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("%s: %v", []string{ConsumerName, OtherConsumerName}[i], err)
		}
	}
	closeSource(t, srcs[0])
	closeSource(t, srcs[1])

	var wrong []string
	for _, m := range msgs {
		a, b := got[0][m.ID], got[1][m.ID]
		if fanOut && (a != 1 || b != 1) || !fanOut && a+b != 1 {
			wrong = append(wrong, fmt.Sprintf("%s %d+%d", m.ID, a, b))
		}
	}
	if len(wrong) > 0 {
		want := "once to one of them (no FanOut)"
		if fanOut {
			want = "once to each (FanOut)"
		}
		t.Errorf("%d of %d messages delivered to %s+%s other than %s: %v", len(wrong), n, ConsumerName, OtherConsumerName, want, wrong)
	}
	t.Logf("FanOut %v: %s got %d messages, %s %d", fanOut, ConsumerName, len(got[0]), OtherConsumerName, len(got[1]))
}
