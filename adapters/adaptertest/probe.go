package adaptertest

import (
	"context"
	"testing"
	"time"

	"github.com/oncely/oncely/consumer"
)

// ProbeTimeout bounds the Probe case's call: a probe must be cheap.
const ProbeTimeout = 5 * time.Second

// testProbe: every Source is a consumer.Prober (the runtime asks it whether
// the broker is up when a settlement fails), and on a live broker Probe
// answers nil within ProbeTimeout, before and after deliveries, and honours
// a done ctx by failing.
func testProbe(t *testing.T, h Harness) {
	name := SourceName("probe")
	h.Publish(t, name, msg("probe-1", "k", "b"))
	src := h.NewSource(t, name, ConsumerName)
	defer closeSource(t, src)
	p, ok := src.(consumer.Prober)
	if !ok {
		t.Fatalf("the Source (%T) does not implement consumer.Prober", src)
	}
	probe := func(when string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), ProbeTimeout)
		defer cancel()
		if err := p.Probe(ctx); err != nil {
			t.Errorf("Probe %s: %v, want nil on a live broker", when, err)
		}
	}
	probe("before any delivery")
	d := ReceiveN(t, src, 1, WaitTimeout)[0]
	probe("with a delivery outstanding")
	ctx, cancel := context.WithTimeout(context.Background(), WaitTimeout)
	defer cancel()
	if err := d.Ack(ctx); err != nil {
		t.Fatalf("ack: %v", err)
	}
	probe("after an ack")
	done, stop := context.WithCancel(context.Background())
	stop()
	if err := p.Probe(done); err == nil {
		t.Errorf("Probe with a cancelled ctx returned nil, want an error")
	}
}
