package nats

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/oncely/oncely/consumer"
)

// ErrLiveConsumer is returned (wrapped) by CommitReplay while a Source
// pulls from the durable consumer.
var ErrLiveConsumer = errors.New("the durable consumer has live pull requests")

// ReplayPoint is a durable consumer's replay plan on its source stream, in
// stream sequences.
type ReplayPoint struct {
	// Position is the sequence after the last one delivered: where the
	// consumer goes on today.
	Position uint64
	// Target is the first sequence the consumer delivers after the replay
	// (never beyond Position).
	Target uint64
	// First and End are the stream's first sequence kept and the one after
	// its last.
	First, End uint64
	// EarliestAvailable is set when the target was before the oldest
	// message kept: the replay starts at First instead.
	EarliestAvailable bool
	// Waiting counts the pull requests waiting on the consumer: each is a
	// Source pulling.
	Waiting int
}

// PlanReplay computes where consumerName of source's stream would start
// after a replay to the first message stored at or after at (zero: the
// oldest kept), or to sequence seq when not 0. It changes nothing.
// jetstream.ErrConsumerNotFound or ErrStreamNotFound (wrapped) when absent.
func PlanReplay(ctx context.Context, js jetstream.JetStream, source, consumerName string, at time.Time, seq uint64) (ReplayPoint, error) {
	s, err := js.Stream(ctx, StreamName(source))
	if err != nil {
		return ReplayPoint{}, fmt.Errorf("stream %s: %w", StreamName(source), err)
	}
	c, err := s.Consumer(ctx, consumerName)
	if err != nil {
		return ReplayPoint{}, fmt.Errorf("consumer %s: %w", consumerName, err)
	}
	ci := c.CachedInfo()
	st := s.CachedInfo().State
	p := ReplayPoint{Position: ci.Delivered.Stream + 1, First: st.FirstSeq, End: st.LastSeq + 1, Waiting: ci.NumWaiting}
	if ci.Delivered.Stream == 0 {
		// Nothing delivered yet: the consumer starts at its start.
		p.Position = max(ci.Config.OptStartSeq, st.FirstSeq)
	}
	p.Target = p.First
	p.EarliestAvailable = p.First > 1
	switch {
	case seq > 0:
		if seq > p.Position {
			return ReplayPoint{}, fmt.Errorf("replay target sequence %d is after the consumer's position %d, and moving there would skip %d messages", seq, p.Position, seq-p.Position)
		}
		p.Target, p.EarliestAvailable = max(seq, p.First), seq < p.First
	case !at.IsZero():
		p.Target, p.EarliestAvailable, err = sequenceAt(ctx, js, s, at)
		if err != nil {
			return ReplayPoint{}, err
		}
	}
	p.Target = min(p.Target, p.Position)
	return p, nil
}

// sequenceAt returns the sequence of the first message of s stored at or
// after at (the end when none), and whether older ones were deleted.
func sequenceAt(ctx context.Context, js jetstream.JetStream, s jetstream.Stream, at time.Time) (uint64, bool, error) {
	st := s.CachedInfo().State
	if st.Msgs == 0 || !st.LastTime.After(at) && !st.LastTime.Equal(at) {
		return st.LastSeq + 1, false, nil
	}
	oc, err := js.OrderedConsumer(ctx, s.CachedInfo().Config.Name, jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverByStartTimePolicy, OptStartTime: &at})
	if err != nil {
		return 0, false, fmt.Errorf("finding the message at %s: %w", at.Format(time.RFC3339), err)
	}
	batch, err := oc.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		return 0, false, fmt.Errorf("finding the message at %s: %w", at.Format(time.RFC3339), err)
	}
	if m, ok := <-batch.Messages(); ok {
		md, err := m.Metadata()
		if err != nil {
			return 0, false, err
		}
		return md.Sequence.Stream, md.Sequence.Stream == st.FirstSeq && st.FirstSeq > 1 && md.Timestamp.After(at), nil
	}
	if err := batch.Error(); err != nil {
		return 0, false, fmt.Errorf("finding the message at %s: %w", at.Format(time.RFC3339), err)
	}
	return st.LastSeq + 1, false, nil
}

// ReplayIDs calls fn with the message IDs (header message-id, else
// Nats-Msg-Id) of source's stream messages from sequence from up to (not
// including) to, in batches, in order.
func ReplayIDs(ctx context.Context, js jetstream.JetStream, source string, from, to uint64, fn func(ids []string) error) error {
	if from >= to {
		return nil
	}
	oc, err := js.OrderedConsumer(ctx, StreamName(source), jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: from})
	if err != nil {
		return fmt.Errorf("reading %s: %w", StreamName(source), err)
	}
	for {
		batch, err := oc.Fetch(1000, jetstream.FetchMaxWait(2*time.Second))
		if err != nil {
			return fmt.Errorf("reading %s: %w", StreamName(source), err)
		}
		var ids []string
		done, seen := false, false
		for m := range batch.Messages() {
			seen = true
			md, err := m.Metadata()
			if err != nil {
				return err
			}
			if md.Sequence.Stream >= to {
				done = true
				continue
			}
			h := m.Headers()
			id := h.Get(consumer.HeaderMessageID)
			if id == "" {
				id = h.Get(nats.MsgIdHdr)
			}
			ids = append(ids, id)
			done = done || md.Sequence.Stream >= to-1
		}
		if err := batch.Error(); err != nil {
			return fmt.Errorf("reading %s: %w", StreamName(source), err)
		}
		if len(ids) > 0 {
			if err := fn(ids); err != nil {
				return err
			}
		}
		if done || !seen {
			return nil
		}
	}
}

// CommitReplay makes consumerName of source's stream deliver from sequence
// target on: JetStream cannot move a consumer's start, so the durable
// consumer is deleted and created again, with its configuration, starting
// at target (DeliverByStartSequence; a Source reopening it keeps that
// start). It refuses while pull requests wait on it (ErrLiveConsumer): stop
// every Source first. A crash between the delete and the create leaves no
// consumer: the next Source creates it at its Config.Start (default
// earliest, which reads again from the oldest message) — run the replay
// again first. Committing a target equal to the consumer's position
// changes nothing.
func CommitReplay(ctx context.Context, js jetstream.JetStream, source, consumerName string, target uint64) error {
	s, err := js.Stream(ctx, StreamName(source))
	if err != nil {
		return fmt.Errorf("stream %s: %w", StreamName(source), err)
	}
	c, err := s.Consumer(ctx, consumerName)
	if err != nil {
		return fmt.Errorf("consumer %s: %w", consumerName, err)
	}
	ci := c.CachedInfo()
	if ci.NumWaiting > 0 {
		return fmt.Errorf("%w: consumer %s of stream %s has %d pull requests waiting (a Source is running); stop every consumer of it first", ErrLiveConsumer, consumerName, StreamName(source), ci.NumWaiting)
	}
	if ci.Delivered.Stream+1 == target || ci.Delivered.Stream == 0 && ci.Config.OptStartSeq == target {
		return nil
	}
	cfg := ci.Config
	cfg.DeliverPolicy, cfg.OptStartSeq, cfg.OptStartTime = jetstream.DeliverByStartSequencePolicy, target, nil
	if err := s.DeleteConsumer(ctx, consumerName); err != nil {
		return fmt.Errorf("deleting consumer %s to recreate it at sequence %d: %w", consumerName, target, err)
	}
	if _, err := s.CreateConsumer(ctx, cfg); err != nil {
		return fmt.Errorf("recreating consumer %s at sequence %d (it is deleted now: run the replay again before starting a Source): %w", consumerName, target, err)
	}
	return nil
}
