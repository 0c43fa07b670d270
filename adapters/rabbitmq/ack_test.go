package rabbitmq

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oncely/oncely/adapters/adaptertest"
	"github.com/oncely/oncely/consumer"
)

// ackFrame is one basic.ack an acker sent.
type ackFrame struct {
	tag      uint64
	multiple bool
}

// fakeChannel checks an acker's frames the way RabbitMQ does: the tag of
// every ack, multiple or not, must be outstanding (else 406, which closes
// the channel); a multiple ack acks every outstanding tag up to it. It also
// fails any frame that would ack a tag the test did not settle.
type fakeChannel struct {
	mu      sync.Mutex
	settled map[uint64]bool // settled by the test
	acked   map[uint64]bool
	frames  []ackFrame
	errs    []error
}

func newFakeChannel() *fakeChannel {
	return &fakeChannel{settled: make(map[uint64]bool), acked: make(map[uint64]bool)}
}

// settle marks tag settled, then records it with a.
func (c *fakeChannel) settle(t *testing.T, a *acker, tag uint64) {
	t.Helper()
	c.mu.Lock()
	c.settled[tag] = true
	c.mu.Unlock()
	if !a.record(tag) {
		t.Fatalf("record(%d) refused", tag)
	}
}

func (c *fakeChannel) ack(tag uint64, multiple bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.frames = append(c.frames, ackFrame{tag, multiple})
	if c.acked[tag] {
		err := fmt.Errorf("ack(%d, %v): unknown delivery tag (acked before)", tag, multiple)
		c.errs = append(c.errs, err)
		return err
	}
	lo := tag
	if multiple {
		lo = 1
	}
	for t := lo; t <= tag; t++ {
		if c.acked[t] {
			continue
		}
		if !c.settled[t] {
			c.errs = append(c.errs, fmt.Errorf("ack(%d, %v) acks unsettled tag %d", tag, multiple, t))
		}
		c.acked[t] = true
	}
	return nil
}

func (c *fakeChannel) snapshot() (frames []ackFrame, acked map[uint64]bool, errs []error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.frames), func() map[uint64]bool {
		m := make(map[uint64]bool, len(c.acked))
		for k, v := range c.acked {
			m[k] = v
		}
		return m
	}(), slices.Clone(c.errs)
}

func (c *fakeChannel) check(t *testing.T) {
	t.Helper()
	for _, err := range c.errs {
		t.Error(err)
	}
}

func TestAckerCoalescesThePrefix(t *testing.T) {
	c := newFakeChannel()
	a := newAcker(c.ack)
	for tag := uint64(1); tag <= 200; tag++ {
		c.settle(t, a, tag)
	}
	if _, _, err := a.flush(false); err != nil {
		t.Fatal(err)
	}
	frames, acked, _ := c.snapshot()
	if want := []ackFrame{{200, true}}; !slices.Equal(frames, want) {
		t.Errorf("frames %v, want %v", frames, want)
	}
	if len(acked) != 200 {
		t.Errorf("%d tags acked, want 200", len(acked))
	}
	c.check(t)
}

func TestAckerWaitsForTheGap(t *testing.T) {
	c := newFakeChannel()
	a := newAcker(c.ack)
	for tag := uint64(2); tag <= 70; tag++ { // across a word boundary
		c.settle(t, a, tag)
	}
	gap, waiting, err := a.flush(false)
	if err != nil {
		t.Fatal(err)
	}
	if gap != 1 || !waiting {
		t.Errorf("flush: gap %d, waiting %v; want 1, true", gap, waiting)
	}
	if frames, _, _ := c.snapshot(); len(frames) != 0 {
		t.Fatalf("frames %v sent with tag 1 unsettled", frames)
	}
	c.settle(t, a, 1)
	if gap, waiting, err = a.flush(false); err != nil {
		t.Fatal(err)
	}
	if gap != 71 || waiting {
		t.Errorf("flush: gap %d, waiting %v; want 71, false", gap, waiting)
	}
	if frames, _, _ := c.snapshot(); !slices.Equal(frames, []ackFrame{{70, true}}) {
		t.Errorf("frames %v, want [{70 true}]", frames)
	}
	c.check(t)
}

// TestAckerFinalFlush: Close's flush acks the prefix with one frame and
// every straggler above a gap on its own, never a gap, and refuses later
// settlements.
func TestAckerFinalFlush(t *testing.T) {
	c := newFakeChannel()
	a := newAcker(c.ack)
	for _, tag := range []uint64{1, 2, 4, 5, 8, 130} {
		c.settle(t, a, tag)
	}
	if _, _, err := a.flush(true); err != nil {
		t.Fatal(err)
	}
	want := []ackFrame{{2, true}, {4, false}, {5, false}, {8, false}, {130, false}}
	if frames, _, _ := c.snapshot(); !slices.Equal(frames, want) {
		t.Errorf("frames %v, want %v", frames, want)
	}
	if a.record(3) {
		t.Error("record after the final flush accepted")
	}
	c.check(t)
}

// TestAckerStuckGap: tags settled above a gap that stays open are acked one
// by one after stuckAfter, so are later ones while it stays open, and when
// the gap closes its tag is acked without naming a tag acked before.
func TestAckerStuckGap(t *testing.T) {
	c := newFakeChannel()
	a := newAcker(c.ack)
	lost := make(chan struct{})
	done := make(chan struct{})
	go func() { defer close(done); a.run(lost, func(err error) { t.Errorf("send: %v", err) }) }()
	defer func() { close(lost); <-done }()

	ackedAll := func(tags ...uint64) func() bool {
		return func() bool {
			_, acked, _ := c.snapshot()
			for _, tag := range tags {
				if !acked[tag] {
					return false
				}
			}
			return true
		}
	}
	for tag := uint64(2); tag <= 5; tag++ {
		c.settle(t, a, tag)
	}
	adaptertest.WaitUntil(t, 10*time.Second, "tags 2-5 acked on their own", ackedAll(2, 3, 4, 5))
	c.settle(t, a, 6)
	adaptertest.WaitUntil(t, 10*time.Second, "tag 6 acked while the gap stays open", ackedAll(6))
	if _, acked, _ := c.snapshot(); acked[1] {
		t.Fatal("tag 1 acked unsettled")
	}
	c.settle(t, a, 1)
	adaptertest.WaitUntil(t, 10*time.Second, "tag 1 acked", ackedAll(1))
	c.settle(t, a, 8)
	c.settle(t, a, 7)
	adaptertest.WaitUntil(t, 10*time.Second, "tags 7 and 8 acked", ackedAll(7, 8))
	frames, _, _ := c.snapshot()
	t.Logf("frames: %v", frames)
	c.check(t)
}

// TestAckerRandomOrder settles tags from several goroutines in a shuffled
// order, leaves some of the last unsettled (handlers still running at a
// hard stop), and checks that every settled tag is acked exactly once, no
// unsettled tag ever is, and no frame names a tag acked before. With a slow
// handler holding tag 7 until every other tag is acked (one by one, behind
// the stuck gap), settling it acks it alone, with a multiple ack across
// the thousands acked before.
func TestAckerRandomOrder(t *testing.T) {
	for _, slow := range []uint64{0, 7} {
		t.Run(fmt.Sprintf("slow=%d", slow), func(t *testing.T) { testAckerRandomOrder(t, slow) })
	}
}

func testAckerRandomOrder(t *testing.T, slow uint64) {
	const n, workers = 20_000, 8
	c := newFakeChannel()
	a := newAcker(c.ack)
	lost := make(chan struct{})
	done := make(chan struct{})
	go func() { defer close(done); a.run(lost, func(err error) { t.Errorf("send: %v", err) }) }()

	// Tags reach workers in order, like deliveries, and finish out of order.
	tags := make(chan uint64, 64)
	unsettled := make(map[uint64]bool)
	for tag := uint64(n - 100); tag <= n; tag++ {
		if rand.IntN(10) == 0 {
			unsettled[tag] = true
		}
	}
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for tag := range tags {
				if rand.IntN(4) == 0 {
					time.Sleep(time.Duration(rand.IntN(50)) * time.Microsecond)
				}
				c.settle(t, a, tag)
			}
		})
	}
	for tag := uint64(1); tag <= n; tag++ {
		if !unsettled[tag] && tag != slow {
			tags <- tag
		}
	}
	close(tags)
	wg.Wait()
	if slow != 0 {
		adaptertest.WaitUntil(t, 30*time.Second, "every tag but the slow one acked", func() bool {
			_, acked, _ := c.snapshot()
			return len(acked) == n-1-len(unsettled)
		})
		c.settle(t, a, slow)
		adaptertest.WaitUntil(t, 10*time.Second, "the slow tag acked", func() bool {
			_, acked, _ := c.snapshot()
			return acked[slow]
		})
		if frames, _, _ := c.snapshot(); frames[len(frames)-1] != (ackFrame{slow, true}) {
			t.Errorf("last frame %v, want {%d true}", frames[len(frames)-1], slow)
		}
	}
	if _, _, err := a.flush(true); err != nil {
		t.Fatal(err)
	}
	close(lost)
	<-done

	frames, acked, _ := c.snapshot()
	c.check(t)
	for tag := uint64(1); tag <= n; tag++ {
		if acked[tag] == unsettled[tag] {
			t.Fatalf("tag %d: acked %v, unsettled %v", tag, acked[tag], unsettled[tag])
		}
	}
	t.Logf("%d tags (%d unsettled) acked in %d frames", n, len(unsettled), len(frames))
	if slow == 0 && len(frames) >= n-len(unsettled) {
		t.Errorf("%d frames for %d settled tags: nothing coalesced", len(frames), n-len(unsettled))
	}
}

// session returns src's current session.
func (src *Source) session() *session {
	src.mu.Lock()
	defer src.mu.Unlock()
	return src.cur
}

// unacked returns the number of messages of queue delivered and not yet
// acknowledged, as rabbitmqctl reports it (t is skipped without it). For a
// quorum queue it is a snapshot taken every 5 seconds, 0 before the first:
// wait for a non-zero value only.
func unacked(t testing.TB, queue string) int {
	t.Helper()
	out := rabbitmqctl(t, "list_queues", "-q", "--no-table-headers", "name", "messages_unacknowledged")
	for line := range strings.SplitSeq(out, "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == queue {
			n, err := strconv.Atoi(f[1])
			if err != nil {
				t.Fatalf("rabbitmqctl list_queues: %q: %v", line, err)
			}
			return n
		}
	}
	t.Fatalf("queue %s not in rabbitmqctl list_queues:\n%s", queue, out)
	return 0
}

// tagOf returns d's delivery tag.
func tagOf(t testing.TB, d consumer.Delivery) uint64 {
	t.Helper()
	tag, err := strconv.ParseUint(d.Message().Coordinates["delivery-tag"], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return tag
}

// TestAcksCoalesce settles 300 deliveries while the flusher is busy (its
// send lock held) and checks that one basic.ack frame settles them all on
// the broker.
func TestAcksCoalesce(t *testing.T) {
	const n = 300
	queue := uniqueName("coalesce")
	cleanupTopology(t, queue, "ledger", testTiers)
	publish(t, queue, msgs("m", n)...)
	src := newSource(t, Config{Queue: queue, Consumer: "ledger", Prefetch: n})
	ds := adaptertest.ReceiveN(t, src, n, 20*time.Second)
	acks := src.session().acks
	before := acks.frames.Load()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	acks.sendMu.Lock()
	for _, d := range ds {
		if err := d.Ack(ctx); err != nil {
			acks.sendMu.Unlock()
			t.Fatal(err)
		}
	}
	acks.sendMu.Unlock()
	if err := src.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if frames := acks.frames.Load() - before; frames != 1 {
		t.Errorf("%d deliveries acked in %d frames, want 1", n, frames)
	}
	// Unacked messages would be back in the queue after the close.
	if d := depth(t, queue); d != 0 {
		t.Errorf("queue holds %d after Close, want 0", d)
	}
}

// TestOutOfOrderSettlement settles deliveries 2..20 in reverse while the
// first stays with its handler: they are acked (on their own, once the gap
// at tag 1 has stayed open for stuckAfter; on Close at the latest), and the
// first is not; it alone comes back after a graceful stop or a lost
// connection. (Fewer than 32 stragglers: RabbitMQ's quorum-queue client
// drops settlements beyond 32 pending when the channel closes; see the
// package documentation.)
func TestOutOfOrderSettlement(t *testing.T) {
	const n = 20
	settle := func(t *testing.T, src *Source) (held consumer.Delivery) {
		ds := adaptertest.ReceiveN(t, src, n, 20*time.Second)
		slices.SortFunc(ds, func(a, b consumer.Delivery) int { return cmp.Compare(tagOf(t, b), tagOf(t, a)) })
		held, rest := ds[n-1], ds[:n-1]
		if tagOf(t, held) != 1 {
			t.Fatalf("lowest tag %d, want 1", tagOf(t, held))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for _, d := range rest {
			if err := d.Ack(ctx); err != nil {
				t.Fatal(err)
			}
		}
		return held
	}
	// onlyHeldLeft checks the queue holds exactly held's message, unacked
	// by anyone.
	onlyHeldLeft := func(t *testing.T, queue string, held consumer.Delivery) {
		adaptertest.WaitUntil(t, 10*time.Second, "one message back in the queue", func() bool { return depth(t, queue) == 1 })
		left := drain(t, queue, KeyHeaderDefault)
		if len(left) != 1 || left[0].ID != held.Message().ID {
			t.Errorf("queue holds %d messages (first %v), want only %s", len(left), left, held.Message().ID)
		}
	}

	t.Run("graceful stop", func(t *testing.T) {
		queue := uniqueName("outoforder")
		cleanupTopology(t, queue, "ledger", testTiers)
		publish(t, queue, msgs("m", n)...)
		src := newSource(t, Config{Queue: queue, Consumer: "ledger", Prefetch: n})
		held := settle(t, src)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := src.Close(ctx); err != nil {
			t.Fatal(err)
		}
		if err := held.Ack(ctx); !errors.Is(err, ErrStaleDelivery) {
			t.Errorf("Ack after Close: %v, want ErrStaleDelivery", err)
		}
		onlyHeldLeft(t, queue, held)
	})

	t.Run("connection lost", func(t *testing.T) {
		addr, proxy := proxied(t)
		queue := uniqueName("outoforder")
		cleanupTopology(t, queue, "ledger", testTiers)
		publish(t, queue, msgs("m", n)...)
		src := newSource(t, Config{URL: addr, Queue: queue, Consumer: "ledger", Prefetch: n})
		held := settle(t, src)
		adaptertest.WaitUntil(t, 10*time.Second, "the 49 settled deliveries acked", func() bool { return unacked(t, queue) == 1 })
		proxy.Cut()
		<-held.(consumer.Leased).Lost()
		again := adaptertest.ReceiveN(t, src, 1, 20*time.Second)[0]
		if again.Message().ID != held.Message().ID {
			t.Errorf("redelivered %s, want %s", again.Message().ID, held.Message().ID)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := src.Close(ctx); err != nil {
			t.Fatal(err)
		}
		onlyHeldLeft(t, queue, held)
	})
}

// TestCoalescedAcksStayInTheirGeneration records acks that the flusher has
// not sent yet, loses the connection, and checks that they are dropped:
// not sent on the new channel, where tags restart at 1 and the same tags
// name the redelivered messages.
func TestCoalescedAcksStayInTheirGeneration(t *testing.T) {
	src, proxy, queue, old := receivedBehindProxy(t, "coalescegen")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	byTag := func(ds []consumer.Delivery) map[uint64]consumer.Delivery {
		m := make(map[uint64]consumer.Delivery)
		for _, d := range ds {
			m[tagOf(t, d)] = d
		}
		return m
	}
	oldByTag := byTag(old)
	acks := src.session().acks
	acks.sendMu.Lock() // the flusher sends nothing until the connection is gone
	for _, tag := range []uint64{2, 3} {
		if err := oldByTag[tag].Ack(ctx); err != nil {
			acks.sendMu.Unlock()
			t.Fatal(err)
		}
	}
	proxy.Cut()
	<-old[0].(consumer.Leased).Lost()
	acks.sendMu.Unlock()

	fresh := byTag(adaptertest.ReceiveN(t, src, 3, 20*time.Second))
	for tag := range uint64(3) {
		if _, ok := fresh[tag+1]; !ok {
			t.Fatalf("no delivery with tag %d on the new channel", tag+1)
		}
	}
	if err := oldByTag[1].Ack(ctx); !errors.Is(err, ErrStaleDelivery) {
		t.Errorf("late Ack: %v, want ErrStaleDelivery", err)
	}
	if err := fresh[1].Ack(ctx); err != nil {
		t.Fatal(err)
	}
	if err := src.Close(ctx); err != nil {
		t.Fatal(err)
	}
	adaptertest.WaitUntil(t, 10*time.Second, "two messages back in the queue", func() bool { return depth(t, queue) == 2 })
	var got []string
	for _, m := range drain(t, queue, KeyHeaderDefault) {
		got = append(got, m.ID)
	}
	slices.Sort(got)
	want := []string{fresh[2].Message().ID, fresh[3].Message().ID}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("queue holds %v, want %v (the new deliveries with tags 2 and 3, which the old acks must not reach)", got, want)
	}
}
