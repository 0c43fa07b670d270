package rabbitmq

import (
	"math"
	"math/bits"
	"sync"
	"sync/atomic"
	"time"
)

// stuckAfter is how long a gap in the settled delivery tags may hold back
// the acks of the tags settled above it. Past it, those are acked one by
// one (and so are the ones settled later, until the gap closes), so a slow
// handler holds back the acks of the messages settled around it (and with
// them the broker's prefetch window) for about this long, not for as long
// as it runs.
const stuckAfter = 20 * time.Millisecond

// acker coalesces the basic.acks of one session's consume channel. Settled
// delivery tags are recorded; a flusher goroutine acks the settled prefix
// (every tag up to W settled) with a single basic.ack(W, multiple), as soon
// as it advances. A tag settled above an unsettled one waits for the gap to
// close; if it stays open for stuckAfter, the tags above it are acked one by
// one. An ack frame is never sent for an unsettled tag, and never on another
// session's channel (tags restart at 1 on a new channel). Close's final
// flush acks everything recorded, the prefix and the stragglers.
//
// RabbitMQ rejects a multiple ack naming a tag already acked (406 unknown
// delivery tag, which closes the channel), so the tag of a multiple ack is
// always the highest one in the prefix not yet acked on its own.
type acker struct {
	send func(tag uint64, multiple bool) error
	kick chan struct{} // cap 1: a settlement the flusher should look at

	mu sync.Mutex
	// next is the lowest tag not covered by an ack already sent: every tag
	// below it is acked.
	next uint64
	// base is the tag of words[0]'s bit 0, a multiple of 64 <= next.
	base  uint64
	words []ackWord
	// waiting counts settled tags >= next not yet acked.
	waiting int
	// low is the lowest tag recorded since the last sweep of singles, so
	// a sweep behind a long-stuck gap does not rescan what it acked before.
	low uint64
	// stuck is the gap tag found open for stuckAfter while tags above it
	// waited; while next == stuck, the tags above it are acked singly.
	stuck uint64
	// closed is set by the final flush; later settlements are refused.
	closed bool

	// sendMu serialises flushes: frames go out in the order they were
	// computed, so a multiple ack never names a tag acked before it.
	sendMu  sync.Mutex
	singles []uint64 // scratch, under sendMu
	// frames counts the basic.ack frames sent.
	frames atomic.Int64
}

// ackWord holds 64 tags: settled ones, and those acked on their own.
type ackWord struct{ settled, sent uint64 }

func newAcker(send func(tag uint64, multiple bool) error) *acker {
	return &acker{send: send, kick: make(chan struct{}, 1), next: 1, low: math.MaxUint64}
}

// record marks tag settled and wakes the flusher when that can lead to an
// ack: the tag closes the gap at the watermark, is the first to wait above
// it (the flusher starts the stuck timer), or the gap is stuck. It reports
// false, recording nothing, after the final flush.
func (a *acker) record(tag uint64) bool {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return false
	}
	if tag < a.next {
		a.mu.Unlock()
		return true // acked already; unreachable, as each delivery settles once
	}
	i := int((tag - a.base) / 64)
	for len(a.words) <= i {
		a.words = append(a.words, ackWord{})
	}
	a.words[i].settled |= 1 << ((tag - a.base) % 64)
	a.waiting++
	a.low = min(a.low, tag)
	wake := tag == a.next || a.waiting == 1 || a.stuck != 0
	a.mu.Unlock()
	if wake {
		select {
		case a.kick <- struct{}{}:
		default:
		}
	}
	return true
}

// take computes the frames to send under a.mu and moves the watermark:
// multi (0 for none) acks the settled prefix; singles, the settled tags
// above the first gap, when all is set or the gap is stuck. It returns the
// gap's tag and whether settled tags still wait above it.
func (a *acker) take(all bool) (multi uint64, singles []uint64, gap uint64, waiting bool) {
	singles = a.singles[:0]
	// The prefix: settled tags from next up to the first unsettled one.
	g := a.next
	for {
		i := (g - a.base) / 64
		if i >= uint64(len(a.words)) {
			break
		}
		off := (g - a.base) % 64
		run := uint64(bits.TrailingZeros64(^(a.words[i].settled >> off)))
		g += run
		if run < 64-off {
			break
		}
	}
	if g > a.next {
		// Word by word over the prefix: its tags not acked on their own
		// stop waiting, and the highest of them is the multiple ack's tag.
		for t := a.next; t < g; {
			i := (t - a.base) / 64
			end := min(g, a.base+(i+1)*64)
			mask := (uint64(1)<<(end-t) - 1) << ((t - a.base) % 64) // 1<<64 is 0 in Go
			if m := ^a.words[i].sent & mask; m != 0 {
				a.waiting -= bits.OnesCount64(m)
				multi = a.base + i*64 + uint64(63-bits.LeadingZeros64(m))
			}
			t = end
		}
		a.next = g
		drop := int((a.next - a.base) / 64)
		a.words = a.words[drop:]
		a.base += uint64(drop) * 64
		if len(a.words) > 0 { // forget the tags below next
			below := uint64(1)<<((a.next-a.base)%64) - 1
			a.words[0].settled &^= below
			a.words[0].sent &^= below
		}
	}
	if a.stuck != a.next {
		a.stuck = 0
	}
	if all || a.stuck != 0 {
		// Below max(next, low) every settled tag is acked already.
		for i := (max(a.next, a.low) - a.base) / 64; i < uint64(len(a.words)); i++ {
			w := &a.words[i]
			for m := w.settled &^ w.sent; m != 0; m &= m - 1 {
				b := uint64(bits.TrailingZeros64(m))
				singles = append(singles, a.base+uint64(i)*64+b)
				w.sent |= 1 << b
				a.waiting--
			}
		}
	}
	if all || a.stuck != 0 {
		a.low = math.MaxUint64
	}
	a.singles = singles
	return multi, singles, a.next, a.waiting > 0
}

// flush sends what take computed. With all set it is the final flush:
// every recorded tag is acked and later settlements are refused.
func (a *acker) flush(all bool) (gap uint64, waiting bool, err error) {
	a.sendMu.Lock()
	defer a.sendMu.Unlock()
	a.mu.Lock()
	multi, singles, gap, waiting := a.take(all)
	if all {
		a.closed = true
	}
	a.mu.Unlock()
	if multi != 0 {
		a.frames.Add(1)
		if err := a.send(multi, true); err != nil {
			return gap, waiting, err
		}
	}
	for _, t := range singles {
		a.frames.Add(1)
		if err := a.send(t, false); err != nil {
			return gap, waiting, err
		}
	}
	return gap, waiting, nil
}

// run is the flusher: it acks whenever a settlement may allow it, and
// watches the gap below waiting tags, until lost closes. A failed send
// (the channel or socket is gone) is reported to fail, once.
func (a *acker) run(lost <-chan struct{}, fail func(error)) {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	var watched uint64 // the gap the timer runs for; 0 when stopped
	for {
		select {
		case <-lost:
			return
		case <-a.kick:
		case <-timer.C:
			a.mu.Lock()
			if a.next == watched && a.waiting > 0 {
				a.stuck = watched
			}
			a.mu.Unlock()
			watched = 0
		}
		gap, waiting, err := a.flush(false)
		if err != nil {
			fail(err)
			return
		}
		switch {
		case !waiting:
			if watched != 0 {
				timer.Stop()
				watched = 0
			}
		case gap != watched:
			timer.Reset(stuckAfter)
			watched = gap
		}
	}
}
