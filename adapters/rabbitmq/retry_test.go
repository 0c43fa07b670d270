package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/oncely/oncely/adapters/adaptertest"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/retry"
)

// TestRetryTiersNeverEarly retries messages with delays that fall on, between
// and beyond the tiers, and checks each copy arrives no sooner than its
// delay, through the expected retry queue, with the same ID, key and body
// and exactly the headers given (plus the broker's x-death record).
func TestRetryTiersNeverEarly(t *testing.T) {
	tiers := retry.Tiers{100 * time.Millisecond, 300 * time.Millisecond, 600 * time.Millisecond}
	delays := []time.Duration{
		50 * time.Millisecond,   // below the first tier: 100ms
		100 * time.Millisecond,  // on a tier
		301 * time.Millisecond,  // just past a tier: 600ms
		1500 * time.Millisecond, // past the largest tier: parked again until due
	}
	queue := uniqueName("tiers")
	src := newSource(t, Config{Queue: queue, Consumer: "ledger", Tiers: tiers})
	in := make([]*consumer.Message, len(delays))
	for i := range in {
		in[i] = &consumer.Message{ID: fmt.Sprintf("r%d", i), Key: fmt.Sprintf("key-%d", i), Body: []byte(fmt.Sprintf("body-%d", i)),
			Headers: map[string]string{"x-custom": "kept", "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}
	}
	publish(t, queue, in...)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	first := adaptertest.ReceiveN(t, src, len(in), 20*time.Second)
	type sent struct {
		at      time.Time
		after   time.Duration
		headers map[string]string
	}
	want := make(map[string]sent)
	for _, d := range first {
		m := d.Message()
		if m.Attempt != 1 {
			t.Errorf("%s: first delivery Attempt %d", m.ID, m.Attempt)
		}
		var i int
		fmt.Sscanf(m.ID, "r%d", &i)
		now := time.Now()
		h := consumer.FailureHeaders(m, consumer.Failure{Consumer: "ledger", Err: errors.New("boom"), NextAttempt: 2, NotBefore: now.Add(delays[i]), At: now})
		if err := d.Retry(ctx, delays[i], h); err != nil {
			t.Fatalf("Retry %s: %v", m.ID, err)
		}
		want[m.ID] = sent{at: now, after: delays[i], headers: h}
	}
	type arrival struct {
		d  consumer.Delivery
		at time.Time
	}
	var again []arrival
	for len(again) < len(in) {
		ds, err := src.Receive(ctx, len(in)-len(again))
		if err != nil {
			t.Fatalf("after %d copies: %v", len(again), err)
		}
		for _, d := range ds {
			again = append(again, arrival{d, time.Now()})
		}
	}
	for _, a := range again {
		d, got := a.d, a.at
		m := d.Message()
		w := want[m.ID]
		gap := got.Sub(w.at)
		t.Logf("%s: delay %s, tier %s, delivered after %s", m.ID, w.after, tiers.Tier(w.after), gap.Round(time.Millisecond))
		if gap < w.after {
			t.Errorf("%s delivered %s after Retry, before its delay %s", m.ID, gap, w.after)
		}
		if gap < tiers.Tier(w.after) && w.after <= tiers[len(tiers)-1] {
			t.Errorf("%s delivered %s after Retry, before its tier %s", m.ID, gap, tiers.Tier(w.after))
		}
		var orig *consumer.Message
		for _, o := range in {
			if o.ID == m.ID {
				orig = o
			}
		}
		if m.Key != orig.Key || string(m.Body) != string(orig.Body) {
			t.Errorf("%s: key %q body %q, want %q %q", m.ID, m.Key, m.Body, orig.Key, orig.Body)
		}
		if m.Attempt != 2 {
			t.Errorf("%s: Attempt %d, want 2 (from %s)", m.ID, m.Attempt, consumer.HeaderAttempt)
		}
		own := maps.Clone(m.Headers)
		for k := range own {
			if brokerHeaders[k] {
				delete(own, k)
			}
		}
		if !maps.Equal(own, w.headers) {
			t.Errorf("%s: headers\n got %v\nwant %v", m.ID, own, w.headers)
		}
		if m.Header("x-first-death-reason") != "expired" {
			t.Errorf("%s: x-first-death-reason %q, want expired (came through a TTL queue)", m.ID, m.Header("x-first-death-reason"))
		}
		if err := d.Ack(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range src.topo.retryNames() {
		if n := depth(t, name); n != 0 {
			t.Errorf("retry queue %s holds %d", name, n)
		}
	}
}
