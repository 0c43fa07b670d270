package kafka

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/oncely/oncely/consumer"
)

// Entry states.
const (
	held      uint8 = iota // taken from the broker, not handed to the runtime
	delivered              // handed out, not settled
	hopping                // a retry tier's record being re-published (see hop)
	done                   // settled
)

// entry is one record taken from a partition, tracked until settled.
type entry struct {
	rec   *kgo.Record
	x     *entryExtra // nil on the common path
	state uint8
	gen   uint32 // bumped on every delivery, so stale deliveries are known
	// dropped is the gen of a delivery an in-place retry of an earlier
	// record abandoned (Lost reports it without Source.mu), or 0.
	dropped atomic.Uint32

	// m0 and d0 are the first delivery's Message and delivery, allocated
	// with the entry (see newEntries).
	m0 consumer.Message
	d0 delivery
}

// entryExtra is what only some entries need, kept apart so the common entry
// stays small.
type entryExtra struct {
	// notBefore: the entry is not delivered before; zero: at once. Set for
	// records of retry tiers and for in-place retries.
	notBefore time.Time
	// hopAt, set only before notBefore, is when a retry tier's record that
	// is still not due hops (see Source.hop) instead of holding its
	// partition any longer; zero: never.
	hopAt time.Time
	// retryHeaders replace the record's headers on an in-place redelivery.
	retryHeaders map[string]string
}

// extra returns e.x, allocating it on first use.
func (e *entry) extra() *entryExtra {
	if e.x == nil {
		e.x = new(entryExtra)
	}
	return e.x
}

// notBefore returns when e is due; zero: at once.
func (e *entry) notBefore() time.Time {
	if e.x == nil {
		return time.Time{}
	}
	return e.x.notBefore
}

// dueAt returns when e stops holding its partition back: when it is due,
// or earlier when it hops; zero: at once.
func (e *entry) dueAt() time.Time {
	if e.x == nil {
		return time.Time{}
	}
	if !e.x.hopAt.IsZero() {
		return e.x.hopAt
	}
	return e.x.notBefore
}

// partition tracks one owned topic partition. All fields but s, tp and
// lease (set at creation) are guarded by Source.mu.
type partition struct {
	s  *Source
	tp tp

	// entries are the unsettled records in offset order; settled ones at the
	// front are dropped. entries[:cursor] were delivered (or are done).
	// entries is a window of buf, which add reuses.
	entries  []*entry
	buf      []*entry
	cursor   int
	inflight int // entries in state delivered or hopping

	owned       bool
	lease       context.Context // done when the partition is revoked or lost
	cancelLease context.CancelFunc

	drained chan struct{} // set by a revoke waiting for inflight to reach 0

	isHeld     bool // listed in Source.held
	pausedWait bool // paused because the next record is not due
	pausedFull bool // paused because MaxPartitionInFlight was reached

	next      int64 // offset after the last record taken; -1 before any
	committed int64 // last offset committed; -1 when unknown
	epochLead int32 // leader epoch of the last settled record at the front
}

// add appends es, the next records of the partition in offset order. When
// buf has no room after the entries, they move to its front, or to a new buf
// twice their size once they fill half of it, so buf is reused and growing
// it stays amortised.
func (p *partition) add(es []entry) {
	n := len(p.entries)
	if n+len(es) > cap(p.entries) {
		buf := p.buf
		if 2*(n+len(es)) > cap(buf) {
			buf = make([]*entry, 2*(n+len(es)))
		}
		copy(buf, p.entries)
		clear(buf[n:]) // drop the moved entries' old slots
		p.buf, p.entries = buf, buf[:n]
	}
	for i := range es {
		p.entries = append(p.entries, &es[i])
	}
	p.next = es[len(es)-1].rec.Offset + 1
}

// outstanding counts records taken and not settled.
func (p *partition) outstanding() int { return len(p.entries) }

// take delivers due entries from the cursor on, up to max deliveries in out.
// An entry not due whose hop time has come starts hopping (see Source.hop)
// and no longer holds the entries behind it.
func (p *partition) take(out []consumer.Delivery, max int, now time.Time) []consumer.Delivery {
	for p.cursor < len(p.entries) && len(out) < max {
		e := p.entries[p.cursor]
		if e.state != held {
			p.cursor++
			continue
		}
		if nb := e.notBefore(); !nb.IsZero() && now.Before(nb) {
			if h := e.x.hopAt; h.IsZero() || now.Before(h) {
				break
			}
			e.state = hopping
			p.inflight++
			p.cursor++
			p.s.startHop(p, e)
			continue
		}
		e.state = delivered
		e.gen++
		p.inflight++
		p.cursor++
		m, d := &e.m0, &e.d0
		if e.gen > 1 { // a redelivery (RetryInPlace): new Message, with its retry headers, and delivery
			m, d = p.s.message(e.rec, e.extra().retryHeaders), new(delivery)
		}
		d.p, d.e, d.gen, d.msg = p, e, e.gen, m
		out = append(out, d)
	}
	return out
}

// waitingAt reports whether the next entry to deliver is neither due nor
// due to hop at now.
func (p *partition) waitingAt(now time.Time) bool {
	if p.cursor >= len(p.entries) {
		return false
	}
	d := p.entries[p.cursor].dueAt()
	return !d.IsZero() && now.Before(d)
}

// settle marks e done and drops settled entries from the front.
func (p *partition) settle(e *entry) {
	e.state = done
	p.inflight--
	n := 0
	for n < len(p.entries) && p.entries[n].state == done {
		p.epochLead = p.entries[n].rec.LeaderEpoch
		p.entries[n] = nil
		n++
	}
	if n > 0 {
		p.entries = p.entries[n:]
		p.cursor -= n
		if len(p.entries) == 0 {
			p.entries = p.buf[:0]
		}
	}
}

// commitPoint returns the offset to commit, the first one not settled, and
// whether it advanced past the last commit.
func (p *partition) commitPoint() (kgo.EpochOffset, bool) {
	off, epoch := p.next, p.epochLead
	if len(p.entries) > 0 {
		off, epoch = p.entries[0].rec.Offset, p.entries[0].rec.LeaderEpoch
	}
	if off < 0 || off <= p.committed {
		return kgo.EpochOffset{}, false
	}
	return kgo.EpochOffset{Epoch: epoch, Offset: off}, true
}

// newEntries builds the entries of recs, the records of one partition from
// one poll: one allocation holds the entries with their first Message and
// delivery, and one string holds every key and header value (a retained key
// or header value keeps that string alive, as a retained Body keeps
// franz-go's fetch buffer). A record without headers, or whose only header
// is its ID header, gets no Headers map (see the package documentation).
// tier is the delay of the retry tier the records come from, zero for the
// source topic: a tier's record waits for its not-before header, and hops
// once its tier's delay passed (see hopTime). Records of the source topic
// are first arrivals, written by producers: their "oncely-" headers are
// moved aside (consumer.DistrustHeaders), so only oncely's retry topics
// (and in-place retries, whose headers the runtime wrote) carry an attempt
// count or failure context.
func (s *Source) newEntries(recs []*kgo.Record, tier time.Duration) []entry {
	n := 0
	for _, r := range recs {
		n += len(r.Key)
		for _, kv := range r.Headers {
			n += len(kv.Value)
		}
	}
	var b strings.Builder
	b.Grow(n)
	for _, r := range recs {
		b.Write(r.Key)
		for _, kv := range r.Headers {
			b.Write(kv.Value)
		}
	}
	rest := b.String()
	es := make([]entry, len(recs))
	var now time.Time // taken once, for the first record of a tier
	for i, r := range recs {
		e := &es[i]
		e.rec = r
		var key, id string
		var h map[string]string
		key, rest = rest[:len(r.Key)], rest[len(r.Key):]
		if len(r.Headers) == 1 && len(r.Headers[0].Value) > 0 && slices.Contains(s.cfg.IDHeaders, r.Headers[0].Key) {
			id, rest = rest[:len(r.Headers[0].Value)], rest[len(r.Headers[0].Value):]
		} else if len(r.Headers) > 0 {
			h = make(map[string]string, len(r.Headers))
			for _, kv := range r.Headers {
				h[kv.Key], rest = rest[:len(kv.Value)], rest[len(kv.Value):]
			}
			id = s.idFrom(h)
			if r.Topic == s.cfg.Topic {
				// The source topic is the producers': only the retry and
				// dead-letter topics carry oncely's own copies.
				consumer.DistrustHeaders(h)
			}
		}
		s.fill(&e.m0, r, key, id, h)
		if tier > 0 {
			if nb := consumer.NotBeforeFromHeaders(h); !nb.IsZero() {
				x := e.extra()
				x.notBefore = nb
				if now.IsZero() {
					now = time.Now()
				}
				if hop := hopTime(r.Timestamp, now, tier); hop.Before(nb) {
					x.hopAt = hop
				}
			}
		}
	}
	return es
}

// message builds the Message of r with headers h (a redelivery after an
// in-place retry, whose headers replace the record's), or of r alone when h
// is nil.
func (s *Source) message(r *kgo.Record, h map[string]string) *consumer.Message {
	if h == nil {
		return &s.newEntries([]*kgo.Record{r}, 0)[0].m0
	}
	h = maps.Clone(h)
	m := new(consumer.Message)
	s.fill(m, r, string(r.Key), s.idFrom(h), h)
	return m
}

// idFrom returns the first non-empty IDHeaders header of h.
func (s *Source) idFrom(h map[string]string) string {
	for _, name := range s.cfg.IDHeaders {
		if v := h[name]; v != "" {
			return v
		}
	}
	return ""
}

// fill sets the zero Message m from r, whose key, ID and headers are already
// converted to key, id and h.
func (s *Source) fill(m *consumer.Message, r *kgo.Record, key, id string, h map[string]string) {
	if id == "" && s.cfg.DeriveID {
		id = r.Topic + "/" + strconv.FormatInt(int64(r.Partition), 10) + "/" + strconv.FormatInt(r.Offset, 10)
	}
	m.ID = id
	m.Key = key
	m.Body = r.Value
	m.Headers = h
	m.Source = r.Topic
	m.Attempt = 1
	m.Partition = r.Partition
	m.Offset = r.Offset
	m.Timestamp = r.Timestamp
	if _, ok := h[consumer.HeaderAttempt]; ok {
		m.Attempt = max(1, consumer.AttemptFromHeaders(h))
	}
}
