package adaptertest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/oncely/oncely/consumer"
)

// CountingSource wraps a Source and counts, at its boundary, what the runtime
// receives and settles: deliveries handed out, settlements per delivery, and
// the most deliveries ever outstanding (handed out and not settled). The
// conformance suite uses it to check backpressure and settle-once; adapter and
// runtime tests may use it too. A CountingSource is safe for concurrent use.
type CountingSource struct {
	consumer.Source

	// BeforeAck, when set before the first Receive, is called with a
	// delivery's message before its Ack reaches the wrapped delivery: tests
	// check there what must hold when an ack is sent.
	BeforeAck func(*consumer.Message)

	mu             sync.Mutex
	receiveCalls   int
	received       int
	outstanding    int
	maxOutstanding int
	overAsked      int
	settled        map[string]int // "ack", "retry", "dead-letter" → successful settlements
	double         int
	open           map[*countingDelivery]struct{}
}

// NewCountingSource wraps src.
func NewCountingSource(src consumer.Source) *CountingSource {
	return &CountingSource{Source: src, settled: make(map[string]int), open: make(map[*countingDelivery]struct{})}
}

// Receive calls the wrapped Receive and counts what it hands out.
func (s *CountingSource) Receive(ctx context.Context, n int) ([]consumer.Delivery, error) {
	s.mu.Lock()
	s.receiveCalls++
	s.mu.Unlock()
	ds, err := s.Source.Receive(ctx, n)
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(ds) > n {
		s.overAsked++
	}
	for i, d := range ds {
		cd := &countingDelivery{Delivery: d, s: s}
		s.open[cd] = struct{}{}
		if l, ok := d.(consumer.Leased); ok {
			ds[i] = &leasedCountingDelivery{countingDelivery: cd, lost: l}
		} else {
			ds[i] = cd
		}
	}
	s.received += len(ds)
	s.outstanding += len(ds)
	s.maxOutstanding = max(s.maxOutstanding, s.outstanding)
	return ds, err
}

// Stats is a snapshot of a CountingSource's counters.
type Stats struct {
	// ReceiveCalls counts calls of Receive (including blocked ones).
	ReceiveCalls int
	// Received counts deliveries handed out.
	Received int
	// Outstanding counts deliveries handed out and not settled.
	Outstanding int
	// MaxOutstanding is the largest Outstanding ever seen.
	MaxOutstanding int
	// OverAsked counts Receive calls that returned more than asked.
	OverAsked int
	// Acked, Retried and DeadLettered count successful settlements.
	Acked, Retried, DeadLettered int
	// Double counts settlements attempted on a delivery already settled.
	Double int
}

// Stats returns the counters.
func (s *CountingSource) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Stats{
		ReceiveCalls: s.receiveCalls, Received: s.received, Outstanding: s.outstanding,
		MaxOutstanding: s.maxOutstanding, OverAsked: s.overAsked,
		Acked: s.settled["ack"], Retried: s.settled["retry"], DeadLettered: s.settled["dead-letter"],
		Double: s.double,
	}
}

// Unsettled returns the messages handed out and not settled.
func (s *CountingSource) Unsettled() []*consumer.Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*consumer.Message, 0, len(s.open))
	for d := range s.open {
		out = append(out, d.Message())
	}
	return out
}

type countingDelivery struct {
	consumer.Delivery
	s    *CountingSource
	done bool
}

type leasedCountingDelivery struct {
	*countingDelivery
	lost consumer.Leased
}

func (d *leasedCountingDelivery) Lost() <-chan struct{} { return d.lost.Lost() }

func (d *countingDelivery) settle(what string, err error) error {
	d.s.mu.Lock()
	defer d.s.mu.Unlock()
	if d.done {
		d.s.double++
		return err
	}
	if err == nil {
		d.done = true
		d.s.settled[what]++
		d.s.outstanding--
		delete(d.s.open, d)
	}
	return err
}

func (d *countingDelivery) Ack(ctx context.Context) error {
	if d.s.BeforeAck != nil {
		d.s.BeforeAck(d.Message())
	}
	return d.settle("ack", d.Delivery.Ack(ctx))
}

func (d *countingDelivery) Retry(ctx context.Context, after time.Duration, h map[string]string) error {
	return d.settle("retry", d.Delivery.Retry(ctx, after, h))
}

func (d *countingDelivery) DeadLetter(ctx context.Context, h map[string]string) error {
	return d.settle("dead-letter", d.Delivery.DeadLetter(ctx, h))
}

// ReceiveN receives from src until it has n deliveries or timeout passes,
// asking each Receive for no more than are missing; it fails t on a Receive
// error or on timeout.
func ReceiveN(t testing.TB, src consumer.Source, n int, timeout time.Duration) []consumer.Delivery {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var got []consumer.Delivery
	for len(got) < n {
		ds, err := src.Receive(ctx, n-len(got))
		if err != nil {
			t.Fatalf("received %d of %d deliveries: %v", len(got), n, err)
		}
		if len(ds) > n-len(got) {
			t.Fatalf("Receive(max=%d) returned %d deliveries", n-len(got), len(ds))
		}
		got = append(got, ds...)
	}
	return got
}

// AckN receives n deliveries from src as ReceiveN does, acks each, and
// returns their message IDs in the order received; it fails t on an error.
func AckN(t testing.TB, src consumer.Source, n int, timeout time.Duration) []string {
	t.Helper()
	ids := make([]string, 0, n)
	for _, d := range ReceiveN(t, src, n, timeout) {
		ids = append(ids, d.Message().ID)
		if err := d.Ack(context.Background()); err != nil {
			t.Fatalf("ack %s: %v", d.Message().ID, err)
		}
	}
	return ids
}

// AssertQuiet fails t when src hands out any delivery within window.
func AssertQuiet(t testing.TB, src consumer.Source, window time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), window)
	defer cancel()
	for {
		ds, err := src.Receive(ctx, 100)
		for _, d := range ds {
			m := d.Message()
			t.Errorf("unexpected delivery %q (key %q, attempt %d)", m.ID, m.Key, m.Attempt)
		}
		if err != nil {
			return
		}
	}
}
