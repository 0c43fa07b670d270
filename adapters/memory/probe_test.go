package memory_test

import (
	"context"
	"errors"
	"testing"

	"github.com/oncely/oncely/adapters/memory"
	"github.com/oncely/oncely/consumer"
)

// TestSetDown: a down broker fails every receive, settlement and probe of
// its Sources without effect, and works again once up.
func TestSetDown(t *testing.T) {
	b := memory.NewBroker()
	if err := b.Publish(t.Context(), "q", msgs("m", 3)...); err != nil {
		t.Fatal(err)
	}
	src := b.NewSource("q", "c")
	defer src.Close(t.Context())
	p := src.(consumer.Prober)
	if err := p.Probe(t.Context()); err != nil {
		t.Fatalf("probe of an up broker: %v", err)
	}
	ds := receive(t, src, 3)
	ctx := t.Context()

	b.SetDown(true)
	for what, err := range map[string]error{
		"probe":       p.Probe(ctx),
		"ack":         ds[0].Ack(ctx),
		"retry":       ds[1].Retry(ctx, 0, nil),
		"dead-letter": ds[2].DeadLetter(ctx, nil),
	} {
		if !errors.Is(err, memory.ErrInjected) {
			t.Errorf("%s while down: %v, want ErrInjected", what, err)
		}
	}
	if _, err := src.Receive(ctx, 1); !errors.Is(err, memory.ErrInjected) {
		t.Errorf("receive while down: %v, want ErrInjected", err)
	}
	if b.InFlight("q") != 3 || b.Depth("q") != 3 || len(b.DeadLetters("q", "c")) != 0 {
		t.Fatalf("a failed operation had an effect: in flight %d depth %d", b.InFlight("q"), b.Depth("q"))
	}

	b.SetDown(false)
	if err := p.Probe(ctx); err != nil {
		t.Fatalf("probe after up: %v", err)
	}
	if err := ds[0].Ack(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ds[2].DeadLetter(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if b.Depth("q") != 1 || len(b.DeadLetters("q", "c")) != 1 {
		t.Fatalf("after up: depth %d, %d dead letters", b.Depth("q"), len(b.DeadLetters("q", "c")))
	}
}

// TestProbe: Probe answers nil, fails the next n probes after
// InjectFaults(OpProbe, n), and returns ctx.Err() for a done ctx.
func TestProbe(t *testing.T) {
	b := memory.NewBroker()
	p := b.NewSource("q", "c").(consumer.Prober)
	b.InjectFaults(memory.OpProbe, 2)
	for i := range 2 {
		if err := p.Probe(t.Context()); !errors.Is(err, memory.ErrInjected) {
			t.Fatalf("probe %d: %v, want ErrInjected", i+1, err)
		}
	}
	if err := p.Probe(t.Context()); err != nil {
		t.Fatalf("probe 3: %v", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := p.Probe(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("probe with a cancelled ctx: %v", err)
	}
	if caps := b.NewSource("q", "c").Capabilities(); caps.FanOut || caps.Prefetch != 0 || caps.MaxDelay != 0 || !caps.NativeDelay {
		t.Fatalf("capabilities %+v", caps)
	}
}
