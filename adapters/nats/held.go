package nats

import (
	"slices"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/oncely/oncely/consumer"
)

// A Source holds one delivery per stored message. A message waiting in a
// pull buffer (the nats.go subscription's, ahead of the callback) cannot be
// renewed: the Source does not see it yet. When handlers are slower than
// the buffer is deep, its lease runs out there and the server delivers it
// again, often into the same buffer, behind the first delivery (measured:
// Prefetch 8, AckWait 2s, one handler of 500ms: 22 hand-outs of 16
// messages). So, from the moment a delivery reaches the callback:
//
//   - it is held, and renewed every AckWait/3 like any held delivery;
//   - a later delivery of a message still held takes the held delivery's
//     place (its reply subject is the one the server expects next) and is
//     not handed out again;
//   - a later delivery of a message this Source settled among its last
//     settledMemory settlements of that stream is acked again (the effect,
//     or the copy, was committed before the first ack) and not handed out.
//
// A stale delivery can trail its settlement by at most the deliveries
// ahead of it in the pull buffer and those the runtime holds; settledMemory
// is far above both at the defaults. A redelivery that reaches another
// Source is handed out there: the idempotency claim absorbs it.

// heldKey identifies a held delivery: its stream (puller) and message.
type heldKey struct {
	from *puller
	storedMsg
}

// storedMsg identifies a message in a stream: its sequence, and its store
// time (ns), which tells apart the messages of a stream deleted and
// created again, whose sequences start over.
type storedMsg struct {
	seq    uint64
	stored int64
}

// settledMemory is how many settled messages each stream remembers, at
// least: 8 times Config.Prefetch when larger.
const settledMemory = 1024

// settledRing holds the last messages settled on one stream. Guarded by
// Source.mu.
type settledRing struct {
	msgs []storedMsg
	next int
}

func newSettledRing(prefetch int) *settledRing {
	return &settledRing{msgs: make([]storedMsg, max(settledMemory, 8*prefetch))}
}

func (r *settledRing) add(m storedMsg) {
	r.msgs[r.next] = m
	r.next = (r.next + 1) % len(r.msgs)
}

// has reports whether m is among the remembered; sequences start at 1, so
// an empty entry matches nothing.
func (r *settledRing) has(m storedMsg) bool { return slices.Contains(r.msgs, m) }

// track holds the delivery m of p, or, when m delivers again a message
// held or lately settled, absorbs it as the package comment says and
// returns nil.
func (src *Source) track(p *puller, m jetstream.Msg) *delivery {
	d := &delivery{src: src, from: p, m: m}
	delivered := fillMessage(&d.msg, m, src.cfg.KeyHeader)
	d.delivered = delivered
	if d.msg.Source == src.cfg.Source && consumer.DistrustHeaders(d.msg.Headers) {
		// The source subject is the producers'; oncely's retried copies
		// arrive on RetrySubject. A producer's "oncely-" headers set no
		// attempt, due time or failure context.
		d.msg.Attempt = 1
	}
	if d.msg.Offset < 0 { // no metadata: a key of its own
		src.mu.Lock()
		src.untracked++
		d.key = heldKey{from: p, storedMsg: storedMsg{seq: ^uint64(0) - src.untracked}}
		src.held[d.key] = d
		src.mu.Unlock()
		return d
	}
	d.key = heldKey{from: p, storedMsg: storedMsg{seq: uint64(d.msg.Offset), stored: d.msg.Timestamp.UnixNano()}}
	src.mu.Lock()
	old := src.held[d.key]
	settled := old == nil && delivered > 1 && p.settled.has(d.key.storedMsg)
	if old == nil && !settled {
		src.held[d.key] = d
		src.mu.Unlock()
		return d
	}
	src.mu.Unlock()
	if old != nil {
		switch old.adopt(m) {
		case adopted:
			return nil
		case wasReleased: // given back meanwhile: m is its next delivery
			select {
			case <-src.closing:
				_ = m.Nak()
				return nil
			default:
				return src.track(p, m)
			}
		}
	}
	// Settled by an earlier delivery: acknowledged again.
	if err := src.acks.ack(m); err != nil {
		src.log.Warn("acking a stale delivery of a settled message failed; the server delivers it again", "message_id", d.msg.ID, "error", err)
	}
	return nil
}

// adoption is what adopt did.
type adoption int

const (
	adopted     adoption = iota
	wasSettled           // d was settled: m is stale
	wasReleased          // d was given back (nak'd)
)

// adopt makes m, a later delivery of d's message, the one d settles and
// renews, unless d is settled or released.
func (d *delivery) adopt(m jetstream.Msg) adoption {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case d.settled:
		return wasSettled
	case d.released:
		return wasReleased
	}
	d.m = m
	return adopted
}

// forget stops holding d; a settled d is remembered.
func (src *Source) forget(d *delivery, settled bool) {
	src.mu.Lock()
	defer src.mu.Unlock()
	if src.held[d.key] == d {
		delete(src.held, d.key)
	}
	if settled && d.msg.Offset >= 0 {
		d.from.settled.add(d.key.storedMsg)
	}
}
