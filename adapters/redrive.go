package adapters

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/oncely/oncely/consumer"
)

// Redrive moves dead letters in batches: the copies of up to redriveBatch
// selected letters are published together with one confirmation wait, and
// the originals are removed only after the whole batch was confirmed. One
// publish and one confirmation per letter took 45–54 s for 10,000 letters on
// RabbitMQ and 23.5 s on NATS; batched, a redrive at Rate 1000 keeps the
// pace on every broker (docs/benchmarks-log.md, "Dead-letter redrive (issue
// 21)").
const (
	// redriveBatch bounds the letters published in one batch.
	redriveBatch = 100
	// redriveTick is the pacing step under a Rate: a batch is at most
	// Rate×redriveTick letters, so the rate stays smooth (50 letters every
	// 50ms at Rate 1000, not 1000 at once and then idle).
	redriveTick = 50 * time.Millisecond
	// redrivePendingMax bounds the letters looked at between two flushes
	// (Progress waits for the flush), for filters that select few.
	redrivePendingMax = 1000
	// moveTimeout bounds one batch's publish and removal once started,
	// since a cancelled context no longer stops them.
	moveTimeout = 30 * time.Second
)

// redriveBatchSize is the most selected letters one batch publishes.
func redriveBatchSize(rate float64) int {
	if rate <= 0 {
		return redriveBatch
	}
	return max(1, min(redriveBatch, int(rate*redriveTick.Seconds())))
}

// redriver is one redrive in progress: the letters looked at since the last
// flush (pending, in order) and those of them whose copies the next flush
// publishes.
type redriver struct {
	s       dlqSession
	publish func(context.Context, ...*consumer.Message) error
	opts    RedriveOptions
	size    int
	due     time.Time // when the next batch may go out under a Rate
	total   int
	done    map[string]bool // IDs redriven, flushed or pending

	res     RedriveResult
	pending []pendingLetter
	copies  []*consumer.Message
}

// pendingLetter is a letter looked at and not yet reported.
type pendingLetter struct {
	h    heldLetter
	kind pendingKind
}

type pendingKind int

const (
	pendingSkipped   pendingKind = iota // left in place
	pendingRedriven                     // its copy is in the batch
	pendingDuplicate                    // another copy of a redriven ID: removed without a publish
)

// redrive moves the session's selected letters to publish in batches (see
// redriveBatch). Extra copies of a redriven ID are removed without a second
// publish. Progress is called once per letter, in order, after the batch
// holding it was confirmed and removed; a cancelled ctx stops the redrive
// between batches, never between a batch's publish and its removal.
func redrive(ctx context.Context, s dlqSession, publish func(context.Context, ...*consumer.Message) error, opts RedriveOptions) (res RedriveResult, err error) {
	defer func() { err = errors.Join(err, s.close(context.WithoutCancel(ctx))) }()
	if opts.Rate < 0 || opts.Limit < 0 {
		return res, fmt.Errorf("redrive: Rate and Limit must be >= 0 (0 = unlimited), got %g and %d", opts.Rate, opts.Limit)
	}
	r := &redriver{s: s, publish: publish, opts: opts, size: redriveBatchSize(opts.Rate), total: s.total(), done: map[string]bool{}}
	err = r.run(ctx)
	return r.res, err
}

func (r *redriver) run(ctx context.Context) error {
	for {
		hs, err := r.s.next(ctx, dlqBatch)
		if err != nil {
			return errors.Join(err, r.flush(ctx))
		}
		if len(hs) == 0 {
			return r.flush(ctx)
		}
		for _, h := range hs {
			if r.opts.Limit > 0 && r.res.Redriven+len(r.copies) >= r.opts.Limit {
				return r.flush(ctx)
			}
			r.add(h)
			if len(r.copies) >= r.size || len(r.pending) >= redrivePendingMax {
				if err := r.flush(ctx); err != nil {
					return err
				}
			}
		}
	}
}

// add sorts one letter into the pending batch.
func (r *redriver) add(h heldLetter) {
	p := pendingLetter{h: h, kind: pendingSkipped}
	switch {
	case h.msg.ID != "" && r.done[h.msg.ID]:
		p.kind = pendingDuplicate
	case r.opts.Selects(DeadLetter{Message: h.msg, Copies: 1}):
		p.kind = pendingRedriven
		r.done[h.msg.ID] = true
		r.copies = append(r.copies, RedriveCopy(h.msg))
	}
	r.pending = append(r.pending, p)
}

// flush publishes the batch's copies (no sooner than the Rate allows its
// last one), waits for their confirmation, removes the originals and
// duplicates, then reports every pending letter. On an error nothing of the
// batch is removed or reported.
func (r *redriver) flush(ctx context.Context) error {
	if len(r.pending) == 0 {
		return nil
	}
	if len(r.copies) > 0 {
		if err := r.pace(ctx); err != nil {
			return err
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if !r.opts.DryRun {
		// Once a batch starts, a cancelled ctx no longer stops it: its
		// publish is confirmed and its letters removed (within
		// moveTimeout), so a cancel lands between two batches, never
		// between a publish and its removal.
		mctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), moveTimeout)
		defer cancel()
		if len(r.copies) > 0 {
			if err := r.publish(mctx, r.copies...); err != nil {
				return fmt.Errorf("redrive: publishing %d dead letters back to their source (they stay in the dead-letter destination; a copy that reached the source anyway is absorbed by the idempotency claim when redriven again): %w", len(r.copies), err)
			}
		}
		if err := r.remove(mctx); err != nil {
			return err
		}
	}
	for _, p := range r.pending {
		r.res.Seen++
		switch p.kind {
		case pendingSkipped:
			r.res.Skipped++
		case pendingRedriven:
			r.res.Redriven++
		case pendingDuplicate:
			r.res.DuplicateCopies++
		}
		if r.opts.Progress != nil {
			r.opts.Progress(RedriveProgress{Seen: r.res.Seen, Total: r.total, Redriven: r.res.Redriven, Skipped: r.res.Skipped, DuplicateCopies: r.res.DuplicateCopies})
		}
	}
	r.pending, r.copies = r.pending[:0], r.copies[:0]
	return nil
}

// pace waits until the batch may go out under the Rate: a batch of k
// copies is due k/Rate after the previous batch went out. The schedule
// starts at the first batch and never catches up, so a slow read of the
// destination (an SQS long poll) is not followed by a burst.
func (r *redriver) pace(ctx context.Context) error {
	if r.opts.Rate <= 0 {
		return nil
	}
	if err := sleepUntil(ctx, r.due); err != nil {
		return err
	}
	r.due = time.Now().Add(time.Duration(float64(len(r.copies)) / r.opts.Rate * float64(time.Second)))
	return nil
}

// remove deletes the batch's redriven letters and duplicates from the
// dead-letter destination.
func (r *redriver) remove(ctx context.Context) error {
	var hs []heldLetter
	for _, p := range r.pending {
		if p.kind != pendingSkipped {
			hs = append(hs, p.h)
		}
	}
	if len(hs) == 0 {
		return nil
	}
	const lost = "redrive: %d dead letters were published to their source but not all removed from the dead-letter destination (a second redrive is absorbed by the idempotency claim): %w"
	if b, ok := r.s.(batchRemover); ok {
		if err := b.removeAll(ctx, hs); err != nil {
			return fmt.Errorf(lost, len(hs), err)
		}
		return nil
	}
	for _, h := range hs {
		if err := h.remove(ctx); err != nil {
			return fmt.Errorf(lost, len(hs), fmt.Errorf("%q: %w", h.msg.ID, err))
		}
	}
	return nil
}
