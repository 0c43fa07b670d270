package adapters

import (
	"context"
	"errors"
	"maps"
	"strings"
	"time"

	"github.com/oncely/oncely/consumer"
)

// DeadLetter is one message in a dead-letter destination, as the runtime
// wrote it: the original ID, Key and Body plus the oncely failure headers.
type DeadLetter struct {
	// Message is the dead-lettered copy.
	Message *consumer.Message
	// Copies is how many copies with this message ID the destination holds
	// (more than 1 after a crash between a dead-letter publish and the ack).
	Copies int
}

// Reason is the dead-letter reason (exhausted, permanent, missing-id,
// invalid-id, panic), or "" when the header is missing.
func (d DeadLetter) Reason() string { return d.Message.Header(consumer.HeaderDeadLetterReason) }

// Error is the last handler error, as recorded in the failure headers.
func (d DeadLetter) Error() string { return d.Message.Header(consumer.HeaderError) }

// Consumer is the consumer that dead-lettered the message.
func (d DeadLetter) Consumer() string { return d.Message.Header(consumer.HeaderConsumer) }

// Attempts is the number of attempts made before dead-lettering.
func (d DeadLetter) Attempts() int { return consumer.AttemptFromHeaders(d.Message.Headers) }

// Source is the source the message was first read from.
func (d DeadLetter) Source() string {
	if s := d.Message.Header(consumer.HeaderOriginalSource); s != "" {
		return s
	}
	return d.Message.Source
}

// FailedAt is when the last attempt failed, or the broker's timestamp when
// the header is missing.
func (d DeadLetter) FailedAt() time.Time {
	if t, err := time.Parse(time.RFC3339Nano, d.Message.Header(consumer.HeaderFailedAt)); err == nil {
		return t
	}
	return d.Message.Timestamp
}

// RedriveOptions selects and paces the dead letters Broker.Redrive moves.
// The zero value moves every dead letter as fast as the broker takes them.
type RedriveOptions struct {
	// Reason selects dead letters with exactly this dead-letter reason
	// (e.g. "exhausted"). Empty selects any reason.
	Reason string

	// ErrorContains selects dead letters whose recorded error contains this
	// text. Empty selects any error.
	ErrorContains string

	// ID selects the dead letter with exactly this message ID. Empty
	// selects any ID.
	ID string

	// Match, when set, must also report true for a dead letter to be
	// selected (a group, a set of IDs, any predicate the caller keeps).
	// Nil selects everything. It is called once per dead letter looked
	// at, on the redrive's goroutine, and must not block.
	Match func(DeadLetter) bool

	// Limit stops after exactly this many redriven messages. Zero means no
	// limit.
	Limit int

	// Rate is the most messages redriven per second. Zero means no limit.
	// The pace is smooth and never catches up: messages go in batches of
	// at most Rate/20 (100 at most; 100 without a Rate), a batch of k no
	// sooner than k/Rate after the previous one went out, also after a
	// slow read of the destination.
	Rate float64

	// DryRun selects and counts without publishing or removing anything.
	DryRun bool

	// Progress, when set, is called once per dead letter looked at, in
	// order, after the batch holding it was confirmed by the source and
	// removed from the dead-letter destination; the redrive waits while it
	// runs.
	Progress func(RedriveProgress)
}

// Selects reports whether opts select d.
func (o RedriveOptions) Selects(d DeadLetter) bool {
	return selects(d, o.Reason, o.ErrorContains, o.ID, o.Match)
}

// selects is the filter of RedriveOptions and PurgeOptions: every
// non-empty criterion must hold, and match too when it is set.
func selects(d DeadLetter, reason, errorContains, id string, match func(DeadLetter) bool) bool {
	if reason != "" && d.Reason() != reason {
		return false
	}
	if errorContains != "" && !strings.Contains(d.Error(), errorContains) {
		return false
	}
	if id != "" && d.Message.ID != id {
		return false
	}
	return match == nil || match(d)
}

// RedriveProgress reports a redrive in progress. Seen = Redriven + Skipped
// + DuplicateCopies.
type RedriveProgress struct {
	// Seen is the number of dead letters looked at so far; Total is the
	// destination's depth when the redrive started (an estimate for SQS):
	// the dead letters there are to look at, not the selection.
	Seen, Total int
	// Redriven counts the selected messages moved (or, on a dry run, that
	// would be): the selection so far.
	Redriven int
	// Skipped counts the letters looked at that the filters left in place.
	Skipped int
	// DuplicateCopies counts the extra copies of a redriven ID removed
	// with it.
	DuplicateCopies int
}

// RedriveResult is the outcome of Broker.Redrive.
type RedriveResult struct {
	// Seen is the number of dead letters looked at.
	Seen int
	// Redriven is the number of message IDs published back to the source
	// (on a dry run: that would have been).
	Redriven int
	// Skipped is the number of dead letters the filters left in place.
	Skipped int
	// DuplicateCopies is the number of extra copies of a redriven message
	// ID that were removed without a second publish.
	DuplicateCopies int
}

// RedriveCopy returns the copy of a dead letter that Redrive publishes: same
// ID, Key, Body and headers, minus the per-attempt failure headers (attempt,
// error, error type, stack, failed-at, retry-not-before, dead-letter reason,
// consumer), so the next consumer starts again at attempt 1. The "original"
// headers and first-failed-at are kept as history.
func RedriveCopy(m *consumer.Message) *consumer.Message {
	c := &consumer.Message{ID: m.ID, Key: m.Key, Body: append([]byte(nil), m.Body...), Headers: maps.Clone(m.Headers)}
	for _, h := range []string{
		consumer.HeaderAttempt, consumer.HeaderError, consumer.HeaderErrorType, consumer.HeaderStack,
		consumer.HeaderFailedAt, consumer.HeaderRetryNotBefore, consumer.HeaderDeadLetterReason, consumer.HeaderConsumer,
	} {
		delete(c.Headers, h)
	}
	if m.ID != "" {
		if c.Headers == nil {
			c.Headers = map[string]string{}
		}
		c.Headers[consumer.HeaderMessageID] = m.ID
	}
	return c
}

// heldLetter is a dead letter taken from its destination and not yet removed.
type heldLetter struct {
	msg *consumer.Message
	// remove deletes it from the destination; called only after its copy
	// was confirmed by the source.
	remove func(ctx context.Context) error
	// ref is the broker's handle of the letter (an SQS receipt handle, a
	// Redis entry ID) for sessions that remove many at once (batchRemover).
	ref string
}

// batchRemover is a dlqSession that removes many letters in fewer round
// trips than one remove each. Redrive uses it where it measurably pays
// (docs/benchmarks-log.md, "Dead-letter redrive (issue 21)").
type batchRemover interface {
	// removeAll removes hs, letters this session handed out; on an error
	// some may be left.
	removeAll(ctx context.Context, hs []heldLetter) error
}

// dlqSession reads one dead-letter destination. Letters it hands out stay
// in the destination (hidden from other readers where the broker can) until
// removed; close gives back every letter not removed.
type dlqSession interface {
	// total is the destination's depth when the session opened, or -1.
	total() int
	// next returns up to n letters not handed out before; none when the
	// destination has no more.
	next(ctx context.Context, n int) ([]heldLetter, error)
	// close releases the letters not removed.
	close(ctx context.Context) error
}

const dlqBatch = 100

// listDeadLetters reads a whole session (or up to limit distinct IDs) and
// releases everything.
func listDeadLetters(ctx context.Context, s dlqSession, limit int) (out []DeadLetter, err error) {
	defer func() { err = errors.Join(err, s.close(context.WithoutCancel(ctx))) }()
	index := map[string]int{}
	for {
		hs, err := s.next(ctx, dlqBatch)
		if err != nil {
			return out, err
		}
		if len(hs) == 0 {
			return out, nil
		}
		for _, h := range hs {
			if i, ok := index[h.msg.ID]; ok && h.msg.ID != "" {
				out[i].Copies++
				continue
			}
			if limit > 0 && len(out) >= limit {
				return out, nil
			}
			index[h.msg.ID] = len(out)
			out = append(out, DeadLetter{Message: h.msg, Copies: 1})
		}
	}
}

func sleepUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
