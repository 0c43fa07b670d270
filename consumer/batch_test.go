package consumer_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oncely/oncely/adapters/memory"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	memstore "github.com/oncely/oncely/store/memory"
)

// batchLog records a BatchHandler's calls: the batches it saw, and the
// messages of those it returned nil for ("committed").
type batchLog struct {
	mu        sync.Mutex
	calls     int
	sizes     []int
	committed map[string]int
	order     map[string][]int // per key, the committed bodies in commit order
	active    map[string]bool  // keys of the batches running now
	overlap   string           // a key seen in two running batches
}

func newBatchLog() *batchLog {
	return &batchLog{committed: map[string]int{}, order: map[string][]int{}, active: map[string]bool{}}
}

// handler returns a BatchHandler that fails a batch with fail's error (nil:
// it succeeds) and logs it.
func (l *batchLog) handler(fail func(msgs []*consumer.Message) error) consumer.BatchHandler {
	return consumer.BatchHandlerFunc(func(ctx context.Context, msgs []*consumer.Message) error {
		keys := map[string]bool{}
		l.mu.Lock()
		l.calls++
		l.sizes = append(l.sizes, len(msgs))
		for _, m := range msgs {
			if m.Key == "" || keys[m.Key] {
				continue
			}
			keys[m.Key] = true
			if l.active[m.Key] {
				l.overlap = m.Key
			}
			l.active[m.Key] = true
		}
		l.mu.Unlock()
		err := fail(msgs)
		l.mu.Lock()
		defer l.mu.Unlock()
		for k := range keys {
			delete(l.active, k)
		}
		if err != nil {
			return err
		}
		for _, m := range msgs {
			l.committed[m.ID]++
			var body int
			fmt.Sscan(string(m.Body), &body)
			l.order[m.Key] = append(l.order[m.Key], body)
		}
		return nil
	})
}

func (l *batchLog) snapshot() (calls int, sizes []int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.calls, append([]int(nil), l.sizes...)
}

func (l *batchLog) committedCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.committed)
}

// TestBatchOrderAndIsolation runs 2,000 messages over 40 keys through
// 4 concurrent batches of at most 64. Bug caught: batches that share a key
// while running (set-based updates of one key's rows could deadlock), a
// key's messages committed out of arrival order, a batch over BatchSize, a
// message acked twice or never.
func TestBatchOrderAndIsolation(t *testing.T) {
	const n, keys = 2000, 40
	l := newBatchLog()
	h := l.handler(func([]*consumer.Message) error {
		time.Sleep(100 * time.Microsecond) // let batches overlap
		return nil
	})
	e := newEnv(t, h, consumer.Config{Concurrency: 4, BatchSize: 64, MaxInFlight: 512, BatchMaxWait: time.Millisecond},
		msgsN(n, func(i int) string { return fmt.Sprintf("k%02d", i%keys) })...)
	e.start()
	waitFor(t, "every message processed", func() bool { return e.rec.count(consumer.OutcomeProcessed) == n })
	if err := e.stop(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.overlap != "" {
		t.Errorf("key %s was in two batches running at once", l.overlap)
	}
	for id, c := range l.committed {
		if c != 1 {
			t.Errorf("%s committed %d times", id, c)
		}
	}
	if len(l.committed) != n {
		t.Errorf("committed %d messages, want %d", len(l.committed), n)
	}
	for k, bodies := range l.order {
		for i := 1; i < len(bodies); i++ {
			if bodies[i] < bodies[i-1] {
				t.Fatalf("key %s: message %d committed after %d", k, bodies[i], bodies[i-1])
			}
		}
	}
	for _, s := range l.sizes {
		if s > 64 {
			t.Fatalf("a batch of %d, over BatchSize 64", s)
		}
	}
	if got := e.broker.InFlight(e.source); got != 0 {
		t.Errorf("%d deliveries left unacked", got)
	}
	if len(l.sizes) >= n/2 {
		t.Errorf("%d batches for %d messages: batches do not form", len(l.sizes), n)
	}
}

// TestBatchBisectsPoison fails every batch holding one poison message
// among 500, with a plain error. Bug caught: a whole batch retried or
// dead-lettered for one message, bisection that does not converge, or
// costs more than 2·⌈log2 500⌉ extra calls.
func TestBatchBisectsPoison(t *testing.T) {
	const n, poison = 500, 317
	l := newBatchLog()
	h := l.handler(func(msgs []*consumer.Message) error {
		for _, m := range msgs {
			if m.ID == msgN(poison, "").ID {
				return errors.New("poison")
			}
		}
		return nil
	})
	e := newEnv(t, h, consumer.Config{Concurrency: 1, BatchSize: n, MaxInFlight: n, BatchMaxWait: time.Hour, Retry: fastRetry(1)},
		msgsN(n, func(i int) string { return fmt.Sprintf("k%d", i%7) })...)
	e.start()
	waitFor(t, "the poison dead-lettered", func() bool { return len(e.deadLetters()) == 1 })
	waitFor(t, "the others processed", func() bool { return e.rec.count(consumer.OutcomeProcessed) == n-1 })
	if err := e.stop(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	calls, sizes := l.snapshot()
	limit := 1 + 2*int(math.Ceil(math.Log2(n)))
	t.Logf("%d handler calls for a poison message among %d (limit %d): sizes %v", calls, n, limit, sizes)
	if sizes[0] != n {
		t.Fatalf("first batch held %d messages, want %d", sizes[0], n)
	}
	if calls > limit {
		t.Errorf("%d calls, over 1 + 2·⌈log2 %d⌉ = %d", calls, n, limit)
	}
	if l.committedCount() != n-1 {
		t.Errorf("committed %d messages, want %d", l.committedCount(), n-1)
	}
	dl := e.deadLetters()[0]
	if dl.ID != msgN(poison, "").ID || dl.Headers[consumer.HeaderDeadLetterReason] != consumer.ReasonExhausted ||
		!strings.Contains(dl.Headers[consumer.HeaderError], "poison") {
		t.Errorf("dead letter %s with headers %v", dl.ID, dl.Headers)
	}
}

// TestBatchErrorNamesFailures has the handler name two messages of its
// batch. Bug caught: named failures settled with the batch's error instead
// of their own, the rest not run again, or run again one by one.
func TestBatchErrorNamesFailures(t *testing.T) {
	const n = 20
	l := newBatchLog()
	bad := map[string]error{msgN(3, "").ID: errors.New("bad three"), msgN(11, "").ID: consumer.Permanent(errors.New("bad eleven"))}
	h := l.handler(func(msgs []*consumer.Message) error {
		failed := map[int]error{}
		for i, m := range msgs {
			if err, ok := bad[m.ID]; ok {
				failed[i] = err
			}
		}
		if len(failed) > 0 {
			return &consumer.BatchError{Failed: failed}
		}
		return nil
	})
	e := newEnv(t, h, consumer.Config{Concurrency: 1, BatchSize: n, MaxInFlight: n, BatchMaxWait: time.Hour, Retry: fastRetry(1)},
		msgsN(n, func(int) string { return "" })...)
	e.start()
	waitFor(t, "two dead letters", func() bool { return len(e.deadLetters()) == 2 })
	waitFor(t, "the others processed", func() bool { return e.rec.count(consumer.OutcomeProcessed) == n-2 })
	if err := e.stop(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	calls, sizes := l.snapshot()
	if calls != 2 || sizes[1] != n-2 {
		t.Errorf("calls %d with sizes %v, want 2: [%d %d]", calls, sizes, n, n-2)
	}
	for _, dl := range e.deadLetters() {
		want := map[string][2]string{msgN(3, "").ID: {consumer.ReasonExhausted, "bad three"}, msgN(11, "").ID: {consumer.ReasonPermanent, "bad eleven"}}[dl.ID]
		if dl.Headers[consumer.HeaderDeadLetterReason] != want[0] || !strings.Contains(dl.Headers[consumer.HeaderError], want[1]) {
			t.Errorf("dead letter %s: reason %q error %q, want %q and %q", dl.ID, dl.Headers[consumer.HeaderDeadLetterReason], dl.Headers[consumer.HeaderError], want[0], want[1])
		}
	}
}

// TestBatchPanicIsolated panics on one message. Bug caught: a panic that
// crashes the consumer, or one dead-lettered without reason panic.
func TestBatchPanicIsolated(t *testing.T) {
	const n = 16
	l := newBatchLog()
	h := l.handler(func(msgs []*consumer.Message) error {
		for _, m := range msgs {
			if m.ID == msgN(5, "").ID {
				panic("boom")
			}
		}
		return nil
	})
	e := newEnv(t, h, consumer.Config{Concurrency: 1, BatchSize: n, MaxInFlight: n, BatchMaxWait: time.Hour, Retry: fastRetry(1)},
		msgsN(n, func(int) string { return "" })...)
	e.start()
	waitFor(t, "the panic dead-lettered", func() bool { return len(e.deadLetters()) == 1 })
	waitFor(t, "the others processed", func() bool { return e.rec.count(consumer.OutcomeProcessed) == n-1 })
	if err := e.stop(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	if dl := e.deadLetters()[0]; dl.ID != msgN(5, "").ID || dl.Headers[consumer.HeaderDeadLetterReason] != consumer.ReasonPanic {
		t.Errorf("dead letter %s reason %q", dl.ID, dl.Headers[consumer.HeaderDeadLetterReason])
	}
}

// TestBatchOutageHolds fails the first three calls with an outage. Bug
// caught: an outage bisected (its halves would all fail too, and each
// offender be retried or dead-lettered for a dependency's fault), or
// counted as the messages' attempts.
func TestBatchOutageHolds(t *testing.T) {
	const n = 32
	var outages atomic.Int32
	l := newBatchLog()
	h := l.handler(func([]*consumer.Message) error {
		if outages.Add(1) <= 3 {
			return consumer.Unavailable(errors.New("database down"))
		}
		return nil
	})
	e := newEnv(t, h, consumer.Config{Concurrency: 1, BatchSize: n, MaxInFlight: n, BatchMaxWait: time.Hour, Retry: fastRetry(1), OutageBackoff: fastOutage},
		msgsN(n, func(int) string { return "" })...)
	e.start()
	waitFor(t, "every message processed", func() bool { return e.rec.count(consumer.OutcomeProcessed) == n })
	if err := e.stop(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	calls, sizes := l.snapshot()
	if calls != 4 {
		t.Errorf("%d calls (sizes %v), want 4 whole batches", calls, sizes)
	}
	for _, s := range sizes {
		if s != n {
			t.Errorf("a call of %d messages during the outage: bisected (sizes %v)", s, sizes)
			break
		}
	}
	if got := len(e.deadLetters()) + e.rec.count(consumer.OutcomeRetried); got != 0 {
		t.Errorf("%d messages retried or dead-lettered for an outage", got)
	}
}

// TestBatchLingers sends fewer messages than BatchSize. Bug caught: a
// partial batch that waits for messages that never come.
func TestBatchLingers(t *testing.T) {
	l := newBatchLog()
	e := newEnv(t, l.handler(func([]*consumer.Message) error { return nil }), consumer.Config{BatchSize: 100, BatchMaxWait: 5 * time.Millisecond},
		msgsN(3, func(int) string { return "k" })...)
	e.start()
	waitFor(t, "the partial batch processed", func() bool { return e.rec.count(consumer.OutcomeProcessed) == 3 })
}

// TestBatchDuplicates runs a batch through middleware.Idempotency twice.
// Bug caught: duplicates handed to the handler, or not acked as
// duplicates.
func TestBatchDuplicates(t *testing.T) {
	st, err := memstore.New(memstore.Config{})
	if err != nil {
		t.Fatal(err)
	}
	l := newBatchLog()
	msgs := msgsN(10, func(int) string { return "" })
	broker, rec := newEnv(t, l.handler(func([]*consumer.Message) error { return nil }), consumer.Config{}).broker, newRecorder()
	if err := broker.Publish(context.Background(), "dups", append(msgs, msgs[2], msgs[7])...); err != nil {
		t.Fatal(err)
	}
	c, err := consumer.New(broker.NewSource("dups", "test"), l.handler(func([]*consumer.Message) error { return nil }),
		consumer.Config{Name: "test", BatchSize: 12, BatchMaxWait: time.Hour, Concurrency: 1, MaxInFlight: 12, Logger: discard, Observer: rec},
		middleware.Idempotency(st))
	if err != nil {
		t.Fatal(err)
	}
	stop := startConsumer(t, c)
	waitFor(t, "12 deliveries settled", func() bool {
		return rec.count(consumer.OutcomeProcessed)+rec.count(consumer.OutcomeDuplicate) == 12
	})
	stop()
	if got := rec.count(consumer.OutcomeDuplicate); got != 2 {
		t.Errorf("%d duplicates, want 2", got)
	}
	if calls, sizes := l.snapshot(); calls != 1 || sizes[0] != 10 {
		t.Errorf("handler calls %d with sizes %v, want one of 10", calls, sizes)
	}
}

// TestBatchRefusesPlainMiddleware wraps a BatchHandler in middleware that
// handles single messages only. Bug caught: a batch handler silently fed
// one message at a time.
func TestBatchRefusesPlainMiddleware(t *testing.T) {
	plain := func(next consumer.Handler) consumer.Handler {
		return consumer.HandlerFunc(func(ctx context.Context, m *consumer.Message) error { return next.Handle(ctx, m) })
	}
	l := newBatchLog()
	_, err := consumer.New(newEnv(t, l.handler(nil), consumer.Config{}).src, l.handler(nil),
		consumer.Config{Name: "test", Duplicates: consumer.AllowDuplicates("test")}, plain)
	if !errors.Is(err, consumer.ErrNotBatch) {
		t.Fatalf("New: %v, want ErrNotBatch", err)
	}
}

// TestBatchConfig checks the batch fields' validation. Bugs caught: a
// BatchSize the broker's prefetch or the window can never fill (every
// batch would wait BatchMaxWait), a negative linger accepted.
func TestBatchConfig(t *testing.T) {
	src := memory.NewBroker().NewSource("src", "test")
	l := newBatchLog()
	h := l.handler(nil)
	for _, tc := range []struct {
		src  consumer.Source
		cfg  consumer.Config
		want []string
	}{
		{src, consumer.Config{BatchSize: -1, BatchMaxWait: -time.Second}, []string{"BatchSize must be >= 1", "BatchMaxWait must be > 0"}},
		{src, consumer.Config{BatchSize: 64, MaxInFlight: 32}, []string{"MaxInFlight (32) is below BatchSize (64)"}},
		{prefetching{src}, consumer.Config{BatchSize: 500}, []string{"BatchSize (500) is above memory's prefetch (100)"}},
	} {
		tc.cfg.Name, tc.cfg.Duplicates = "test", consumer.AllowDuplicates("test")
		_, err := consumer.New(tc.src, h, tc.cfg)
		for _, w := range tc.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%+v: error %v, want %q", tc.cfg, err, w)
			}
		}
	}
	// A plain Handler ignores the batch fields' limits.
	plain := consumer.HandlerFunc(func(context.Context, *consumer.Message) error { return nil })
	if _, err := consumer.New(prefetching{src}, plain, consumer.Config{Name: "test", BatchSize: 500, Duplicates: consumer.AllowDuplicates("test")}); err != nil {
		t.Errorf("plain handler with BatchSize over the prefetch: %v", err)
	}
}

// TestRecoverBatch recovers a batch handler's panic. Bug caught: Recover
// turning a BatchHandler into a plain Handler (New would refuse the chain).
func TestRecoverBatch(t *testing.T) {
	h, ok := consumer.Recover(consumer.BatchHandlerFunc(func(context.Context, []*consumer.Message) error { panic("boom") })).(consumer.BatchHandler)
	if !ok {
		t.Fatal("Recover around a BatchHandler is not one")
	}
	var pe *consumer.PanicError
	if err := h.HandleBatch(context.Background(), nil); !errors.As(err, &pe) {
		t.Fatalf("HandleBatch: %v, want a *PanicError", err)
	}
}

// TestBatchRetryAfter fails a batch with RetryAfter. Bug caught: a batch
// that asked to be tried later bisected into 2n-1 calls.
func TestBatchRetryAfter(t *testing.T) {
	const n = 8
	l := newBatchLog()
	h := l.handler(func(msgs []*consumer.Message) error {
		if msgs[0].Attempt == 1 {
			return consumer.RetryAfter(errors.New("rate limited"), time.Millisecond)
		}
		return nil
	})
	// The retry copies settle off the worker, so the retried messages may
	// come back in two batches, the last one cut when BatchMaxWait ends.
	e := newEnv(t, h, consumer.Config{Concurrency: 1, BatchSize: n, MaxInFlight: n, BatchMaxWait: time.Second, Retry: fastRetry(3)},
		msgsN(n, func(int) string { return "" })...)
	e.start()
	waitFor(t, "every message retried and processed", func() bool { return e.rec.count(consumer.OutcomeProcessed) == n })
	if err := e.stop(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	if got := e.rec.count(consumer.OutcomeRetried); got != n {
		t.Errorf("%d retried, want %d", got, n)
	}
	if calls, sizes := l.snapshot(); sizes[0] != n || calls > 1+n {
		t.Errorf("calls %d, sizes %v: the first batch was bisected", calls, sizes)
	}
}
