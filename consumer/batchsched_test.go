package consumer_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/oncely/oncely/consumer"
)

// TestBatchScheduleProperties runs a BatchHandler on random inputs — keys,
// partitions, empty keys, failures (bisected), panics, messages a
// BatchError names as permanent, outages, lease losses and hard stops —
// and checks on every run:
//
//   - no two batch calls running at once share a lane, and each lane's
//     messages commit (their call returns nil) in arrival order;
//   - no batch exceeds BatchSize, and no more than Concurrency calls run
//     at once;
//   - every delivery handed out has exactly one final outcome, is settled
//     at most once and only with that outcome, and a delivery whose lease
//     was lost is abandoned, never acked;
//   - no stall: every delivery reaches its outcome, and Stop returns.
//
// 8 seeds a case (ONCELY_PROPERTY_SEEDS sets another count), in
// testing/synctest bubbles: the linger timers use the fake clock.
func TestBatchScheduleProperties(t *testing.T) {
	type tc struct {
		ordering    consumer.Ordering
		concurrency int
		size        int
		hardStop    bool
	}
	var cases []tc
	for _, o := range []consumer.Ordering{consumer.OrderByKey, consumer.OrderByPartition, consumer.Unordered} {
		for _, c := range []int{1, 3} {
			cases = append(cases, tc{o, c, 16, false})
		}
		cases = append(cases, tc{o, 4, 5, true})
	}
	seeds := 8
	if v, err := strconv.Atoi(os.Getenv("ONCELY_PROPERTY_SEEDS")); err == nil && v > 0 {
		seeds = v
	}
	for i, tc := range cases {
		for k := range seeds {
			seed := uint64(i*seeds + k + 1)
			name := fmt.Sprintf("%s/c%d/size%d/hardstop=%v/seed=%d", tc.ordering, tc.concurrency, tc.size, tc.hardStop, seed)
			t.Run(name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					checkBatchSchedule(t, seed, consumer.Config{
						Ordering: tc.ordering, Concurrency: tc.concurrency, BatchSize: tc.size,
						MaxInFlight: 4 * tc.size, BatchMaxWait: time.Millisecond,
					}, tc.hardStop)
				})
			})
		}
	}
}

func checkBatchSchedule(t *testing.T, seed uint64, cfg consumer.Config, hardStop bool) {
	const n, keys, partitions = 400, 30, 4
	rng := rand.New(rand.NewPCG(seed, seed))
	src := &propSource{rng: rand.New(rand.NewPCG(seed, 1)), leases: map[int32]context.Context{}, revokes: map[int32]context.CancelFunc{}}
	for i := range n {
		key := ""
		if rng.IntN(5) > 0 {
			key = fmt.Sprintf("k%02d", rng.IntN(keys))
		}
		d := &propDelivery{
			m:   &consumer.Message{ID: fmt.Sprintf("m-%04d", i), Key: key, Partition: int32(rng.IntN(partitions)), Attempt: 1},
			seq: i,
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
		switch r := rng.IntN(100); {
		case r < 3:
			d.act = behaveFail
		case r < 4:
			d.act = behavePanic
		case r < 6:
			d.act = behavePermanent
		case r < 8:
			d.act = behaveOutage
		case r < 9:
			d.act = behaveLoseLease
		case hardStop && r < 10:
			d.act = behaveHang
		}
		src.ds = append(src.ds, d)
	}
	byMsg := make(map[*consumer.Message]*propDelivery, n)
	for _, d := range src.ds {
		byMsg[d.m] = d
	}

	var (
		mu        sync.Mutex
		running   = map[string]bool{} // lanes of the calls running
		committed = map[string]int{}  // lane → seq of its last committed message
		outages   = map[*propDelivery]bool{}
		now, top  atomic.Int32
		hangOnce  sync.Once
		hung      = make(chan struct{})
	)
	h := consumer.BatchHandlerFunc(func(ctx context.Context, msgs []*consumer.Message) error {
		raise(&top, now.Add(1))
		defer now.Add(-1)
		if len(msgs) > cfg.BatchSize {
			t.Errorf("seed %d: a batch of %d, BatchSize %d", seed, len(msgs), cfg.BatchSize)
		}
		lanes := map[string]bool{}
		mu.Lock()
		for _, m := range msgs {
			if l := byMsg[m].lane; l != "" && !lanes[l] {
				if running[l] {
					t.Errorf("seed %d: lane %s in two running batches", seed, l)
				}
				lanes[l], running[l] = true, true
			}
		}
		mu.Unlock()
		defer func() {
			mu.Lock()
			for l := range lanes {
				delete(running, l)
			}
			mu.Unlock()
		}()
		if rng := rand.New(rand.NewPCG(seed, uint64(len(msgs)))); rng.IntN(4) == 0 {
			time.Sleep(time.Duration(rng.IntN(300)) * time.Microsecond)
		}
		named := map[int]error{}
		for i, m := range msgs {
			d := byMsg[m]
			switch d.act {
			case behaveFail:
				return errors.New("flaky")
			case behavePanic:
				panic("boom")
			case behavePermanent:
				named[i] = consumer.Permanent(errors.New("malformed"))
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
			case behaveHang:
				hangOnce.Do(func() { close(hung) })
				<-ctx.Done()
				return ctx.Err()
			}
		}
		if len(named) > 0 {
			return consumer.BatchError{Failed: named}
		}
		mu.Lock()
		defer mu.Unlock()
		for _, m := range msgs {
			d := byMsg[m]
			if d.lane == "" {
				continue
			}
			if last, ok := committed[d.lane]; ok && d.seq < last {
				t.Errorf("seed %d: lane %s committed %s (arrival %d) after arrival %d", seed, d.lane, m.ID, d.seq, last)
			}
			committed[d.lane] = d.seq
		}
		return nil
	})

	fin := &finals{by: map[*consumer.Message][]consumer.Outcome{}, want: n, done: make(chan struct{})}
	cfg.Retry = fastRetry(5)
	cfg.OutageBackoff = fastOutage
	cfg.BreakerThreshold = 1 << 20
	if hardStop {
		cfg.SoftStopTimeout, cfg.HardStopTimeout = 20*time.Millisecond, 5*time.Second
	}
	c := newPropConsumer(t, src, h, cfg, fin, false)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	runErr := make(chan error, 1)
	go func() { runErr <- c.Run(ctx) }()
	stopped := make(chan error, 1)
	select {
	case <-fin.done:
	case <-hung:
	case <-time.After(30 * time.Second):
		t.Fatalf("seed %d: stalled: %d of %d deliveries reached an outcome", seed, fin.count(), n)
	}
	go func() { stopped <- c.Stop(context.Background()) }()
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
		if d.act == behaveLoseLease && got == consumer.OutcomeProcessed {
			t.Errorf("seed %d: %s lost its lease, yet was acked", seed, d.m.ID)
		}
		if d.act == behavePermanent && !hardStop && got != consumer.OutcomeDeadLettered && got != consumer.OutcomeAbandoned {
			t.Errorf("seed %d: %s named permanent, yet %s", seed, d.m.ID, got)
		}
	}
	if p := top.Load(); p > int32(cfg.Concurrency) {
		t.Errorf("seed %d: %d batch calls ran at once, Concurrency %d", seed, p, cfg.Concurrency)
	}
}
