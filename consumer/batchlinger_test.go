package consumer_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/oncely/oncely/adapters/memory"
	"github.com/oncely/oncely/consumer"
)

// TestBatchStartsWhenIntakeWaitsForRefill checks that a batch that is not
// full starts at once when nothing more can arrive before a batch runs,
// however many of the window's slots are free. Bug caught: the batch
// scheduler asked the window only whether a slot was free, while intake,
// after a take that filled the window, waits for a refill of free slots
// (MaxInFlight 8: 4). A batch of 2 ran while the window filled; once it was
// acked, 2 slots were free, too few for intake, and the 6 pending messages
// waited BatchMaxWait (an hour) for messages that could not come. This is
// how TestBatchRetryAfter timed out under load: a partial batch of retry
// copies ran, the rest lingered.
//
// In a testing/synctest bubble: time only passes while every goroutine
// waits, so a lingering batch shows as an hour gone by on the fake clock.
func TestBatchStartsWhenIntakeWaitsForRefill(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const wait = time.Hour
		type call struct {
			size int
			at   time.Time
		}
		calls := make(chan call, 2)
		release := make(chan struct{})
		first := true
		h := consumer.BatchHandlerFunc(func(_ context.Context, msgs []*consumer.Message) error {
			calls <- call{len(msgs), time.Now()}
			if first { // only the former calls the handler, one batch at a time
				first = false
				<-release
			}
			return nil
		})
		// Intake's first take asks for 8 and gets the 2 published, gives 6
		// back, then takes those 6 (the window is now full) and waits in
		// Receive.
		e := newEnv(t, h, consumer.Config{Concurrency: 1, BatchSize: 8, MaxInFlight: 8, BatchMaxWait: wait},
			msgsN(2, func(int) string { return "" })...)
		e.start()
		if c := <-calls; c.size != 2 {
			t.Fatalf("first batch of %d, want 2", c.size)
		}
		// While the batch of 2 runs, the 6 others arrive: the window is full
		// and the next take waits for 4 free slots.
		more := msgsN(8, func(int) string { return "" })[2:]
		e.publish(more...)
		synctest.Wait()
		acked := time.Now()
		close(release)
		c := <-calls
		if c.size != 6 {
			t.Errorf("second batch of %d, want 6", c.size)
		}
		if lingered := c.at.Sub(acked); lingered >= wait {
			t.Errorf("the second batch started %v after the first was acked: it waited BatchMaxWait although nothing more could arrive", lingered)
		}
		if err := e.stop(5 * time.Second); err != nil {
			t.Fatal(err)
		}
		if got := e.rec.count(consumer.OutcomeProcessed); got != 8 {
			t.Errorf("%d processed, want 8", got)
		}
	})
}

// TestBatchWaitsForReceiveUnderWay checks that a batch that is not full
// waits for a Receive under way on the window's last free slots: what it
// returns may fill the batch. Bug caught: the batch scheduler took the slots
// intake had taken for that Receive for a full window and started the
// partial batch at once; the messages the Receive then returned formed a
// batch of their own, which, nothing more arriving, waited BatchMaxWait.
// This is how TestBatchRetryAfter also timed out: its 8 retry copies ran as
// 7 and, an hour later, 1.
//
// In a testing/synctest bubble: the second Receive lets the 4th message
// arrive only once every other goroutine waits, so the scheduler has looked
// at the 3 received before.
func TestBatchWaitsForReceiveUnderWay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const wait = time.Hour
		ctx := context.Background()
		b := memory.NewBroker()
		if err := b.Publish(ctx, "src", msgsN(3, func(int) string { return "" })...); err != nil {
			t.Fatal(err)
		}
		src := &hookedSource{Source: b.NewSource("src", "test")}
		src.before = func(call, n int) {
			if call != 2 {
				return
			}
			// Intake asked for 4, got 3, and took the window's last slot
			// for this call.
			if n != 1 {
				t.Errorf("second Receive asked for %d, want 1", n)
			}
			time.Sleep(time.Millisecond) // until everything else waits
			if err := b.Publish(ctx, "src", msgN(3, "")); err != nil {
				t.Error(err)
			}
		}
		calls := make(chan time.Time, 4)
		l := newBatchLog()
		h := l.handler(func([]*consumer.Message) error {
			calls <- time.Now()
			return nil
		})
		c, err := consumer.New(src, h, consumer.Config{
			Name: "test", Logger: discard, Duplicates: consumer.AllowDuplicates("test: counts calls"),
			Concurrency: 1, BatchSize: 4, MaxInFlight: 4, BatchMaxWait: wait,
		})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		stop := startConsumer(t, c)
		at := <-calls
		if _, sizes := l.snapshot(); len(sizes) != 1 || sizes[0] != 4 {
			t.Errorf("batch sizes %v, want [4]: a batch started while a Receive under way could fill it", sizes)
		}
		if d := at.Sub(start); d >= wait {
			t.Errorf("the batch started after %v, BatchMaxWait %v", d, wait)
		}
		stop()
		if calls, sizes := l.snapshot(); calls != 1 {
			t.Errorf("%d batch calls %v, want 1", calls, sizes)
		}
	})
}

// hookedSource calls before with the call's number and max at the start of
// each Receive.
type hookedSource struct {
	consumer.Source
	calls  int // intake calls Receive from one goroutine at a time
	before func(call, n int)
}

func (s *hookedSource) Receive(ctx context.Context, n int) ([]consumer.Delivery, error) {
	s.calls++
	s.before(s.calls, n)
	return s.Source.Receive(ctx, n)
}
