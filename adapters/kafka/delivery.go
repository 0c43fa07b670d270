package kafka

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/oncely/oncely/consumer"
)

// delivery is one handed-out record. It implements consumer.Delivery and
// consumer.Leased.
type delivery struct {
	p       *partition // its lease is the delivery's
	e       *entry
	msg     *consumer.Message
	gen     uint32
	settled atomic.Bool
	trimmed atomic.Bool // the copy last produced was trimmed (see copy.go)
}

var (
	_ consumer.Delivery       = (*delivery)(nil)
	_ consumer.Leased         = (*delivery)(nil)
	_ consumer.LeaseContexter = (*delivery)(nil)
	_ consumer.CopyTrimmer    = (*delivery)(nil)
)

// CopyTrimmed reports whether the retry or dead-letter copy produced by the
// last successful Retry or DeadLetter was trimmed to fit the broker's size
// limit (failure headers shortened, or a dead letter's body removed).
func (d *delivery) CopyTrimmed() bool { return d.trimmed.Load() }

// Message returns the record as a Message.
func (d *delivery) Message() *consumer.Message { return d.msg }

// Lost is closed when the record's partition was revoked or lost before the
// delivery settled; its settlement is then dropped and the record comes
// again. A delivery an in-place retry of an earlier record abandoned (see
// RetryInPlace) reports a closed channel from then on, so the runtime
// drops it before its handler starts; a handler already running (possible
// only when the consumer's ordering lets later records of the key or
// partition run beside the earlier one) finishes, and its settlement is
// dropped. All deliveries of a partition share the partition's lease: no
// allocation per delivery.
func (d *delivery) Lost() <-chan struct{} { return d.LeaseContext().Done() }

// LeaseContext is done exactly when Lost is closed; the runtime ties the
// handler's context to it without a goroutine per delivery.
func (d *delivery) LeaseContext() context.Context {
	if d.e.dropped.Load() == d.gen {
		return abandonedLease
	}
	return d.p.lease
}

// abandonedLease is the lease of a delivery an in-place retry abandoned:
// always done.
var abandonedLease = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

// currentLocked reports whether d still holds its record's lease.
func (d *delivery) currentLocked() bool {
	return d.p.owned && d.e.gen == d.gen && d.e.state == delivered
}

func (d *delivery) current() bool {
	d.p.s.mu.Lock()
	defer d.p.s.mu.Unlock()
	return d.currentLocked()
}

// Ack marks the record settled; the offset is committed once every earlier
// offset of the partition is settled too.
func (d *delivery) Ack(context.Context) error {
	if !d.settled.CompareAndSwap(false, true) {
		return consumer.ErrAlreadySettled
	}
	d.p.s.settle(d)
	return nil
}

// Retry produces a copy to the retry topic of tier Tiers.Tier(after), waits
// for the broker's acknowledgement, then marks the original settled. A
// delay beyond the longest tier is honoured by hopping (see hop.go). A copy
// too large for the topic even after trimming is refused with an error
// wrapping consumer.ErrCopyRefused (see copy.go). With
// RetryInPlace it rewinds the partition instead (see RetryInPlace). A
// delivery that lost its lease produces nothing: the record comes again
// from the partition's new owner.
func (d *delivery) Retry(ctx context.Context, after time.Duration, headers map[string]string) error {
	if d.settled.Load() {
		return consumer.ErrAlreadySettled
	}
	s := d.p.s
	if s.cfg.RetryMode == RetryInPlace {
		if !d.settled.CompareAndSwap(false, true) {
			return consumer.ErrAlreadySettled
		}
		s.rewind(d, after, headers)
		return nil
	}
	if _, ok := headers[consumer.HeaderRetryNotBefore]; !ok {
		headers = withHeader(headers, consumer.HeaderRetryNotBefore, time.Now().Add(after).UTC().Format(time.RFC3339Nano))
	}
	ts := s.tiers.Load()
	if len(ts.own) == 0 {
		return errors.New("kafka: retry before the first Receive created the retry topics")
	}
	return d.copyTo(ctx, ts.byTier[ts.own.Tier(after)], headers, false)
}

// DeadLetter produces a copy to "<topic>.<group>.dlq", waits for the
// broker's acknowledgement, then marks the original settled. A copy too
// large for the topic is trimmed, down to removing its body (see copy.go).
func (d *delivery) DeadLetter(ctx context.Context, headers map[string]string) error {
	if d.settled.Load() {
		return consumer.ErrAlreadySettled
	}
	return d.copyTo(ctx, d.p.s.dlq, headers, true)
}

// copyTo produces a copy of d's record to topic (dead: a dead letter) and,
// once the broker acknowledged it, settles d. A failed produce leaves d
// unsettled.
func (d *delivery) copyTo(ctx context.Context, topic string, headers map[string]string, dead bool) error {
	if !d.current() {
		d.settled.Store(true)
		return nil
	}
	if _, ok := headers[consumer.HeaderMessageID]; !ok && d.msg.ID != "" {
		headers = withHeader(headers, consumer.HeaderMessageID, d.msg.ID)
	}
	trimmed, err := d.produceCopy(ctx, topic, headers, dead)
	if err != nil {
		return fmt.Errorf("kafka: producing copy of %s[%d]@%d to %s: %w", d.msg.Source, d.msg.Partition, d.msg.Offset, topic, err)
	}
	d.trimmed.Store(trimmed)
	if !d.settled.CompareAndSwap(false, true) {
		return consumer.ErrAlreadySettled
	}
	d.p.s.settle(d)
	return nil
}

// settle records d's settlement, unless its lease was lost meanwhile.
func (s *Source) settle(d *delivery) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d.currentLocked() {
		s.settleLocked(d.p, d.e)
	}
}

// settleLocked marks e, delivered or hopping, settled: its offset may be
// committed once the ones before it are.
func (s *Source) settleLocked(p *partition, e *entry) {
	p.settle(e)
	if p.drained != nil && p.inflight == 0 {
		close(p.drained)
		p.drained = nil
	}
	if p.pausedFull && p.outstanding() <= s.cfg.MaxPartitionInFlight/2 {
		p.pausedFull = false
		s.maybeResumeLocked(p)
	}
}

// rewind implements an in-place retry of d: d's record is delivered again
// once after has passed, and the later deliveries of its partition that
// would overtake it (same key; every one with InPlacePartitionOrder) lose
// their lease and are delivered again after it. Records of the partition
// not delivered yet wait behind it.
func (s *Source) rewind(d *delivery, after time.Duration, headers map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !d.currentLocked() {
		return
	}
	p, e := d.p, d.e
	idx := slices.Index(p.entries, e)
	for _, x := range p.entries[idx+1:] {
		if x.state == delivered && (s.cfg.InPlacePartitionOrder || bytes.Equal(x.rec.Key, e.rec.Key)) {
			x.state = held
			x.dropped.Store(x.gen)
			p.inflight--
		}
	}
	e.state = held
	p.inflight--
	p.cursor = min(p.cursor, idx)
	if p.drained != nil && p.inflight == 0 {
		close(p.drained)
		p.drained = nil
	}
	x := e.extra()
	x.retryHeaders = headers
	x.notBefore = time.Now().Add(after)
	if nb := consumer.NotBeforeFromHeaders(headers); nb.After(x.notBefore) {
		x.notBefore = nb
	}
	if !p.isHeld {
		p.isHeld = true
		s.held = append(s.held, p)
	}
	s.takeLocked(nil, 0, time.Now()) // pauses p while it waits
	s.wakeLocked()
}

func withHeader(h map[string]string, k, v string) map[string]string {
	c := make(map[string]string, len(h)+1)
	for hk, hv := range h {
		c[hk] = hv
	}
	c[k] = v
	return c
}

// recordHeaders converts h to Kafka headers, sorted by name for stable
// output.
func recordHeaders(h map[string]string) []kgo.RecordHeader {
	out := make([]kgo.RecordHeader, 0, len(h))
	for k, v := range h {
		out = append(out, kgo.RecordHeader{Key: k, Value: []byte(v)})
	}
	slices.SortFunc(out, func(a, b kgo.RecordHeader) int {
		switch {
		case a.Key < b.Key:
			return -1
		case a.Key > b.Key:
			return 1
		}
		return 0
	})
	return out
}
