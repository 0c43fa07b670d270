package consumer_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/oncely/oncely/consumer"
)

// TestScheduleProperties runs the runtime on random inputs — many keys and
// partitions, empty keys, random handler durations, failures, panics,
// permanent errors, outages, lease losses and hard stops — and checks the
// scheduler's invariants on every run:
//
//   - per lane (key, partition, or the partition of an empty key, as the
//     Ordering says), handlers run one at a time and in arrival order;
//   - every delivery the source handed out has exactly one final outcome
//     (processed, retried, dead-lettered or abandoned), and is settled at
//     most once, and only with that outcome;
//   - no more than Concurrency handlers run at once;
//   - no stall: every delivery reaches its outcome, and Stop returns.
//
// Each case runs on the runtime's scheduler and on the plain reference
// scheduler (see consumer/plainsched.go), with the same seed: the same
// deliveries and handler behaviours, 8 seeds a case (ONCELY_PROPERTY_SEEDS
// sets another count). A failure names the seed to replay.
func TestScheduleProperties(t *testing.T) {
	type tc struct {
		ordering    consumer.Ordering
		concurrency int
		maxInFlight int
		hardStop    bool
	}
	var cases []tc
	for _, o := range []consumer.Ordering{consumer.OrderByKey, consumer.OrderByPartition, consumer.Unordered} {
		for _, c := range []int{1, 3, 8} {
			cases = append(cases, tc{o, c, 4 * c, false})
		}
		cases = append(cases, tc{o, 4, 64, true})
	}
	seeds := 8
	if v, err := strconv.Atoi(os.Getenv("ONCELY_PROPERTY_SEEDS")); err == nil && v > 0 {
		seeds = v
	}
	for _, sched := range []string{"runtime", "plain"} {
		for i, tc := range cases {
			for k := range seeds {
				seed := uint64(i*seeds + k + 1)
				name := fmt.Sprintf("%s/%s/c%d/inflight%d/hardstop=%v/seed=%d", sched, tc.ordering, tc.concurrency, tc.maxInFlight, tc.hardStop, seed)
				t.Run(name, func(t *testing.T) {
					synctest.Test(t, func(t *testing.T) {
						checkSchedule(t, seed, sched == "plain", consumer.Config{
							Ordering: tc.ordering, Concurrency: tc.concurrency, MaxInFlight: tc.maxInFlight,
						}, tc.hardStop)
					})
				})
			}
		}
	}
}

// behaviour is what the handler does with one delivery.
type behaviour int

const (
	behaveOK behaviour = iota
	behaveFail
	behavePanic
	behavePermanent
	behaveOutage    // Unavailable once, then succeeds in place
	behaveLoseLease // revokes its partition's lease while it runs
	behaveHang      // blocks until its context ends (hard-stop runs only)
)

// propDelivery is one delivery of propSource: it counts its settlements.
type propDelivery struct {
	m       *consumer.Message
	seq     int // arrival order
	lane    string
	act     behaviour
	spin    int // Gosched calls the handler makes
	sleep   time.Duration
	lease   context.Context
	revoke  context.CancelFunc
	settled atomic.Int32
	how     atomic.Value // consumer.Outcome the settlement implies
}

func (d *propDelivery) Message() *consumer.Message    { return d.m }
func (d *propDelivery) Lost() <-chan struct{}         { return d.lease.Done() }
func (d *propDelivery) LeaseContext() context.Context { return d.lease }
func (d *propDelivery) Ack(context.Context) error {
	d.settle(consumer.OutcomeProcessed)
	return nil
}
func (d *propDelivery) Retry(context.Context, time.Duration, map[string]string) error {
	d.settle(consumer.OutcomeRetried)
	return nil
}
func (d *propDelivery) DeadLetter(context.Context, map[string]string) error {
	d.settle(consumer.OutcomeDeadLettered)
	return nil
}
func (d *propDelivery) settle(o consumer.Outcome) {
	d.settled.Add(1)
	d.how.Store(o)
}

// propSource hands out its deliveries in random batches, each with its
// partition's current lease, then waits for the end of intake.
type propSource struct {
	rng     *rand.Rand // guarded by mu
	mu      sync.Mutex
	ds      []*propDelivery
	next    int
	leases  map[int32]context.Context
	revokes map[int32]context.CancelFunc
}

func (s *propSource) Receive(ctx context.Context, n int) ([]consumer.Delivery, error) {
	s.mu.Lock()
	if s.next < len(s.ds) {
		k := min(1+s.rng.IntN(n), len(s.ds)-s.next)
		out := make([]consumer.Delivery, k)
		for i := range out {
			d := s.ds[s.next+i]
			p := d.m.Partition
			if s.leases[p] == nil || s.leases[p].Err() != nil {
				s.leases[p], s.revokes[p] = context.WithCancel(context.Background())
			}
			d.lease, d.revoke = s.leases[p], s.revokes[p]
			out[i] = d
		}
		s.next += k
		s.mu.Unlock()
		return out, nil
	}
	s.mu.Unlock()
	<-ctx.Done()
	return nil, ctx.Err()
}

func (s *propSource) handedOut() []*propDelivery {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ds[:s.next]
}

func (s *propSource) Close(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, revoke := range s.revokes {
		revoke()
	}
	return nil
}

func (s *propSource) Capabilities() consumer.Capabilities {
	return consumer.Capabilities{Broker: "prop", Partitioned: true}
}

// finals is an Observer counting each delivery's final outcomes.
type finals struct {
	mu   sync.Mutex
	by   map[*consumer.Message][]consumer.Outcome
	n    int
	want int
	done chan struct{} // closed when n reaches want
}

func (f *finals) Settled(_ context.Context, ev consumer.Event) {
	if ev.Outcome == consumer.OutcomeFailed {
		return // the delivery is held and tried again
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.by[ev.Message] = append(f.by[ev.Message], ev.Outcome)
	if f.n++; f.n == f.want {
		close(f.done)
	}
}

func (f *finals) BreakerChanged(bool) {}

func checkSchedule(t *testing.T, seed uint64, plain bool, cfg consumer.Config, hardStop bool) {
	const n, keys, partitions = 600, 40, 4
	rng := rand.New(rand.NewPCG(seed, seed))
	src := &propSource{rng: rand.New(rand.NewPCG(seed, 1)), leases: map[int32]context.Context{}, revokes: map[int32]context.CancelFunc{}}
	for i := range n {
		key := ""
		if rng.IntN(5) > 0 {
			key = fmt.Sprintf("k%02d", rng.IntN(keys))
		}
		d := &propDelivery{
			m:   &consumer.Message{ID: fmt.Sprintf("m-%04d", i), Key: key, Partition: int32(rng.IntN(partitions)), Attempt: 1},
			seq: i, spin: rng.IntN(40),
		}
		switch cfg.Ordering {
		case consumer.OrderByPartition:
			d.lane = fmt.Sprintf("p%d", d.m.Partition)
		case consumer.OrderByKey:
			d.lane = "k" + key
			if key == "" {
				d.lane = fmt.Sprintf("p%d", d.m.Partition)
			}
		}
		if rng.IntN(10) == 0 {
			d.sleep = time.Duration(rng.IntN(300)) * time.Microsecond
		}
		switch r := rng.IntN(100); {
		case r < 6:
			d.act = behaveFail
		case r < 10:
			d.act = behavePanic
		case r < 13:
			d.act = behavePermanent
		case r < 15:
			d.act = behaveOutage
		case r < 17:
			d.act = behaveLoseLease
		case hardStop && r < 19:
			d.act = behaveHang
		}
		src.ds = append(src.ds, d)
	}
	byMsg := make(map[*consumer.Message]*propDelivery, n)
	for _, d := range src.ds {
		byMsg[d.m] = d
	}

	var (
		mu       sync.Mutex
		running  = map[string]int{} // lane → handlers running
		lastSeq  = map[string]int{} // lane → seq of the last handler started
		outages  = map[*propDelivery]bool{}
		now, top atomic.Int32
		hangOnce sync.Once
		hung     = make(chan struct{}) // closed when a handler first hangs
	)
	h := consumer.HandlerFunc(func(ctx context.Context, m *consumer.Message) error {
		d := byMsg[m]
		raise(&top, now.Add(1))
		defer now.Add(-1)
		if d.lane != "" {
			mu.Lock()
			if running[d.lane] > 0 {
				t.Errorf("seed %d: %s started while lane %s ran another", seed, m.ID, d.lane)
			}
			if last, ok := lastSeq[d.lane]; ok && d.seq < last {
				t.Errorf("seed %d: lane %s ran %s (arrival %d) after arrival %d", seed, d.lane, m.ID, d.seq, last)
			}
			running[d.lane]++
			lastSeq[d.lane] = d.seq
			mu.Unlock()
			defer func() {
				mu.Lock()
				running[d.lane]--
				mu.Unlock()
			}()
		}
		for range d.spin {
			runtime.Gosched()
		}
		if d.sleep > 0 {
			time.Sleep(d.sleep)
		}
		switch d.act {
		case behaveFail:
			return errors.New("flaky")
		case behavePanic:
			panic("boom")
		case behavePermanent:
			return consumer.Permanent(errors.New("malformed"))
		case behaveOutage:
			mu.Lock()
			first := !outages[d]
			outages[d] = true
			mu.Unlock()
			if first {
				return consumer.Unavailable(errors.New("database is down"))
			}
		case behaveLoseLease:
			d.revoke()
			<-ctx.Done()
			return ctx.Err()
		case behaveHang:
			hangOnce.Do(func() { close(hung) })
			<-ctx.Done()
			return ctx.Err()
		}
		return nil
	})

	fin := &finals{by: map[*consumer.Message][]consumer.Outcome{}, want: n, done: make(chan struct{})}
	cfg.Retry = fastRetry(5)
	cfg.OutageBackoff = fastOutage
	cfg.BreakerThreshold = 1 << 20 // outages hold deliveries; intake is not the subject here
	if hardStop {
		cfg.SoftStopTimeout, cfg.HardStopTimeout = 20*time.Millisecond, 5*time.Second
	}
	c := newPropConsumer(t, src, h, cfg, fin, plain)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	runErr := make(chan error, 1)
	go func() { runErr <- c.Run(ctx) }()
	stopped := make(chan error, 1)
	select {
	case <-fin.done:
		go func() { stopped <- c.Stop(context.Background()) }()
	case <-hung:
		// Stop while a handler hangs: the stop must end in the hard stop.
		go func() { stopped <- c.Stop(context.Background()) }()
	case <-time.After(30 * time.Second):
		t.Fatalf("seed %d: stalled: %d of %d deliveries reached an outcome", seed, fin.count(), n)
	}
	select {
	case err := <-stopped:
		if err != nil {
			t.Errorf("seed %d: Stop: %v", seed, err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("seed %d: Stop stalled", seed)
	}
	if err := <-runErr; err != nil {
		t.Errorf("seed %d: Run: %v", seed, err)
	}

	out := src.handedOut()
	if !hardStop && len(out) != n {
		t.Errorf("seed %d: source handed out %d of %d", seed, len(out), n)
	}
	fin.mu.Lock()
	defer fin.mu.Unlock()
	for _, d := range out {
		got, ok := checkOutcome(t, seed, d, fin.by[d.m])
		if !ok {
			continue
		}
		if d.act == behaveLoseLease && got != consumer.OutcomeAbandoned {
			t.Errorf("seed %d: %s lost its lease, yet %s", seed, d.m.ID, got)
		}
	}
	if p := top.Load(); p > int32(cfg.Concurrency) {
		t.Errorf("seed %d: %d handlers ran at once, Concurrency %d", seed, p, cfg.Concurrency)
	}
}

// newPropConsumer builds the consumer of a propSource test, named "test",
// reporting to fin, on the plain scheduler when plain is set.
func newPropConsumer(t *testing.T, src *propSource, h consumer.Handler, cfg consumer.Config, fin *finals, plain bool) *consumer.Consumer {
	t.Helper()
	cfg.Name, cfg.Logger, cfg.Observer = "test", discard, fin
	cfg.Duplicates = consumer.AllowDuplicates("test: counts deliveries, not effects")
	c, err := consumer.New(src, h, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if plain {
		consumer.UsePlainScheduler(c)
	}
	return c
}

func (f *finals) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n
}

// checkOutcome checks d's final outcomes got: exactly one, and d settled at
// most once and only as that outcome implies (never when abandoned, never a
// duplicate). It returns the outcome and whether there was exactly one.
func checkOutcome(t *testing.T, seed uint64, d *propDelivery, got []consumer.Outcome) (consumer.Outcome, bool) {
	t.Helper()
	if len(got) != 1 {
		t.Errorf("seed %d: %s (%v): outcomes %v, want exactly one", seed, d.m.ID, d.act, got)
		return "", false
	}
	settled := d.settled.Load()
	switch {
	case settled > 1:
		t.Errorf("seed %d: %s settled %d times", seed, d.m.ID, settled)
	case got[0] == consumer.OutcomeAbandoned && settled != 0:
		t.Errorf("seed %d: %s abandoned yet settled", seed, d.m.ID)
	case got[0] == consumer.OutcomeDuplicate:
		t.Errorf("seed %d: %s reported a duplicate", seed, d.m.ID)
	case got[0] != consumer.OutcomeAbandoned && (settled != 1 || d.how.Load() != got[0]):
		t.Errorf("seed %d: %s reported %s, settled %d time(s) as %v", seed, d.m.ID, got[0], settled, d.how.Load())
	}
	return got[0], true
}
