package kafka

import (
	"context"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/oncely/oncely/consumer"
)

// Entry states.
const (
	held      uint8 = iota // taken from the broker, not handed to the runtime
	delivered              // handed out, not settled
	done                   // settled
)

// entry is one record taken from a partition, tracked until settled.
type entry struct {
	rec       *kgo.Record
	msg       *consumer.Message
	notBefore time.Time // not delivered before; zero: at once
	state     uint8
	gen       uint32 // bumped on every delivery, so stale deliveries are known

	// retryHeaders replace the record's headers on an in-place redelivery.
	retryHeaders map[string]string
	// lease is the current delivery's own lease (RetryInPlace only: an
	// in-place retry abandons later deliveries of the same key); a child of
	// the partition's lease.
	lease       context.Context
	cancelLease context.CancelFunc

	// m0 and d0 are the first delivery's Message and delivery, allocated
	// with the entry (one allocation per record on the common path).
	m0 consumer.Message
	d0 delivery
}

// partition tracks one owned topic partition. All fields are guarded by
// Source.mu.
type partition struct {
	tp   tp
	tier bool // a retry tier topic: records wait for their not-before header

	// entries are the unsettled records in offset order; settled ones at the
	// front are dropped. entries[:cursor] were delivered (or are done).
	entries  []*entry
	cursor   int
	inflight int // entries in state delivered

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

func (p *partition) add(e *entry) {
	p.entries = append(p.entries, e)
	p.next = e.rec.Offset + 1
}

// outstanding counts records taken and not settled.
func (p *partition) outstanding() int { return len(p.entries) }

// take delivers due entries from the cursor on, up to max deliveries in out.
func (p *partition) take(s *Source, out []consumer.Delivery, max int, now time.Time) []consumer.Delivery {
	for p.cursor < len(p.entries) && len(out) < max {
		e := p.entries[p.cursor]
		if e.state != held {
			p.cursor++
			continue
		}
		if !e.notBefore.IsZero() && now.Before(e.notBefore) {
			break
		}
		e.state = delivered
		e.gen++
		p.inflight++
		p.cursor++
		m := e.msg
		if m == nil {
			m = s.message(e.rec, e.retryHeaders)
		}
		e.msg = nil // a redelivery builds a new Message
		d := &e.d0
		if e.gen > 1 {
			d = new(delivery)
		}
		d.s, d.p, d.e, d.gen, d.msg, d.lease = s, p, e, e.gen, m, p.lease
		if s.cfg.RetryMode == RetryInPlace {
			e.lease, e.cancelLease = context.WithCancel(p.lease)
			d.lease = e.lease
		}
		out = append(out, d)
	}
	return out
}

// waitingAt reports whether the next entry to deliver is not due at now.
func (p *partition) waitingAt(now time.Time) bool {
	if p.cursor >= len(p.entries) {
		return false
	}
	nb := p.entries[p.cursor].notBefore
	return !nb.IsZero() && now.Before(nb)
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
			p.entries = nil
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

// newEntry builds the entry and Message of record r taken from p.
func (s *Source) newEntry(p *partition, r *kgo.Record) *entry {
	e := &entry{rec: r}
	s.fill(&e.m0, r, nil)
	e.msg = &e.m0
	if p.tier {
		e.notBefore = consumer.NotBeforeFromHeaders(e.msg.Headers)
	}
	return e
}

// message builds the Message of r; h, when not nil, replaces its headers.
func (s *Source) message(r *kgo.Record, h map[string]string) *consumer.Message {
	m := new(consumer.Message)
	s.fill(m, r, h)
	return m
}

// fill sets m from r; h, when not nil, replaces r's headers.
func (s *Source) fill(m *consumer.Message, r *kgo.Record, h map[string]string) {
	// The key and every header value share one string allocation.
	n := len(r.Key)
	if h == nil {
		for _, kv := range r.Headers {
			n += len(kv.Value)
		}
	}
	var b strings.Builder
	b.Grow(n)
	b.Write(r.Key)
	if h == nil {
		for _, kv := range r.Headers {
			b.Write(kv.Value)
		}
	}
	all := b.String()
	key, rest := all[:len(r.Key)], all[len(r.Key):]
	if h == nil {
		h = make(map[string]string, len(r.Headers))
		for _, kv := range r.Headers {
			h[kv.Key], rest = rest[:len(kv.Value)], rest[len(kv.Value):]
		}
	} else {
		h = maps.Clone(h)
	}
	id := ""
	for _, name := range s.cfg.IDHeaders {
		if v := h[name]; v != "" {
			id = v
			break
		}
	}
	if id == "" && s.cfg.DeriveID {
		id = r.Topic + "/" + strconv.FormatInt(int64(r.Partition), 10) + "/" + strconv.FormatInt(r.Offset, 10)
	}
	*m = consumer.Message{
		ID:        id,
		Key:       key,
		Body:      r.Value,
		Headers:   h,
		Source:    r.Topic,
		Attempt:   1,
		Partition: r.Partition,
		Offset:    r.Offset,
		Timestamp: r.Timestamp,
	}
	if _, ok := h[consumer.HeaderAttempt]; ok {
		m.Attempt = max(1, consumer.AttemptFromHeaders(h))
	}
}
