package redis

import (
	"context"
	"fmt"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/oncely/oncely/consumer"
)

// delivery is one stream entry pending with this Source's consumer. It is
// settled at most once.
type delivery struct {
	s       *Source
	msg     consumer.Message // one allocation with the delivery
	stream  string           // the source stream or the retry stream
	entryID string
	count   int64 // the entry's delivery counter
	gen     *generation

	mu       sync.Mutex
	settled  bool
	busy     bool
	released bool
}

// newDelivery returns the delivery of an entry (its Message in the same
// allocation); the caller registers it (Source.track) before handing it
// out.
//
// Simple on purpose: one delivery allocated per entry. Allocating them per
// read (one slice for the XREADGROUP reply, one look at the lease
// generation) was measured in BenchmarkConsume and did not pay 3 %
// (pooled median of 30 rounds 0.80 against 0.82 before, inside the
// rounds' spread), so it was not kept. See docs/benchmarks-log.md, "Redis
// Streams (R2)".
func (s *Source) newDelivery(stream string, e goredis.XMessage, count int64) *delivery {
	d := &delivery{s: s, stream: stream, entryID: e.ID, count: max(count, 1), gen: s.leases.current()}
	s.codec.fill(&d.msg, stream, e, count)
	if stream == s.cfg.Stream && consumer.DistrustHeaders(d.msg.Headers) {
		// The source stream is the producers'; oncely's retried and
		// redriven copies arrive on RetryStream. A producer's "oncely-"
		// headers set no attempt or failure context: the attempt is the
		// delivery count alone.
		d.msg.Attempt = int(d.count)
	}
	return d
}

// Message returns the message.
func (d *delivery) Message() *consumer.Message { return &d.msg }

// begin marks a settlement in progress; a settled delivery (or one being
// settled) refuses another.
func (d *delivery) begin() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.settled || d.busy {
		return consumer.ErrAlreadySettled
	}
	d.busy = true
	return nil
}

// end finishes a settlement: done reports it succeeded.
func (d *delivery) end(done bool) {
	d.mu.Lock()
	d.busy = false
	d.settled = d.settled || done
	d.mu.Unlock()
	if done {
		d.s.mu.Lock()
		delete(d.s.open, d)
		d.s.mu.Unlock()
	}
}

// markReleased reports whether Close should release d: it is unsettled
// and was not released before.
func (d *delivery) markReleased() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.settled || d.released {
		return false
	}
	d.released = true
	return true
}

// inRetryStream reports whether the entry is in the retry stream, whose
// settled entries are deleted.
func (d *delivery) inRetryStream() bool { return d.stream == d.s.retry }

// Ack acknowledges the entry (XACK; in the retry stream also XDEL). It
// queues the ack and returns: acks queued meanwhile share one round trip,
// a failed one is retried, and Close writes what is queued. An ack lost
// with the process leaves the entry pending, to be reclaimed after the
// lease and absorbed by the idempotency claim.
func (d *delivery) Ack(ctx context.Context) error {
	if err := d.begin(); err != nil {
		return err
	}
	err := d.s.acks.ack(ctx, d.stream, d.entryID, d.inRetryStream())
	d.end(err == nil)
	if err != nil {
		return fmt.Errorf("redis: acking %s %s: %w", d.stream, d.entryID, err)
	}
	return nil
}

// Retry stores a copy (same ID, Key and Body, headers replaced) in the
// delayed set, due after the delay by Redis's clock (rounded up to the
// millisecond, never early), and acks the original in the same script.
// Once due, the next Receive of any Source of the consumer moves it to the
// retry stream and delivers it.
func (d *delivery) Retry(ctx context.Context, after time.Duration, headers map[string]string) error {
	if err := d.begin(); err != nil {
		return err
	}
	fields := d.s.codec.fields(d.msg.ID, d.msg.Key, d.msg.Body, headers)
	member := packFields(d.stream+"/"+d.entryID+"/"+headers[consumer.HeaderAttempt], fields)
	delay := (after + time.Millisecond - 1) / time.Millisecond
	n, err := retryScript.Run(ctx, d.s.client, []string{d.stream, d.s.delayed},
		d.s.cfg.Consumer, d.entryID, flag(d.inRetryStream()), int64(delay), member, d.s.name).Int()
	d.end(err == nil)
	if err != nil {
		d.s.recoverGroup(ctx, err)
		return fmt.Errorf("redis: retrying %s %s: %w", d.stream, d.entryID, err)
	}
	d.leaseLost(ctx, n, "retry")
	return nil
}

// DeadLetter appends a copy (same ID, Key and Body, headers replaced) to
// the dead-letter stream and acks the original in the same script.
func (d *delivery) DeadLetter(ctx context.Context, headers map[string]string) error {
	if err := d.begin(); err != nil {
		return err
	}
	args := []any{d.s.cfg.Consumer, d.entryID, flag(d.inRetryStream()), d.s.name}
	args = append(args, d.s.codec.fields(d.msg.ID, d.msg.Key, d.msg.Body, headers)...)
	n, err := deadLetterScript.Run(ctx, d.s.client, []string{d.stream, d.s.dlq}, args...).Int()
	d.end(err == nil)
	if err != nil {
		d.s.recoverGroup(ctx, err)
		return fmt.Errorf("redis: dead-lettering %s %s: %w", d.stream, d.entryID, err)
	}
	d.leaseLost(ctx, n, "dead-letter")
	return nil
}

// leaseLost logs a settlement a script skipped (n == 0): the entry was no
// longer pending with this consumer, so the consumer that reclaimed it
// settles it.
func (d *delivery) leaseLost(ctx context.Context, n int, what string) {
	if n == 0 {
		d.s.log.WarnContext(ctx, "redis: the lease of an entry ended before its "+what+" copy was written; the consumer that reclaimed it settles it",
			"stream_key", d.stream, "entry", d.entryID, "message_id", d.msg.ID)
	}
}

func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}
