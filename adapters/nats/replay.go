package nats

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/failpoint"
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
	c, _, err := lookupConsumer(ctx, s, consumerName)
	if err != nil {
		return ReplayPoint{}, fmt.Errorf("consumer %s: %w", consumerName, err)
	}
	ci := c.CachedInfo() // an interrupted replay's marker: its start, nothing delivered
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

// ReplayMarker names the durable consumer CommitReplay creates, beside
// consumerName, while it recreates consumerName at a new start: it carries
// the new start until consumerName exists again. A Source that finds its
// durable missing and the marker there creates the durable at the marker's
// start, so a replay interrupted between its delete and its create is
// completed rather than restarted at Config.Start.
func ReplayMarker(consumerName string) string { return consumerName + "__replay" }

// lookupConsumer returns consumerName of s, or, while a replay recreating
// it is interrupted (consumerName missing), its ReplayMarker with found
// false. jetstream.ErrConsumerNotFound (wrapped) when neither exists.
func lookupConsumer(ctx context.Context, s jetstream.Stream, consumerName string) (c jetstream.Consumer, found bool, err error) {
	c, err = s.Consumer(ctx, consumerName)
	if err == nil || !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return c, err == nil, err
	}
	if m, merr := s.Consumer(ctx, ReplayMarker(consumerName)); merr == nil {
		return m, false, nil
	}
	return nil, false, err
}

// CommitReplay makes consumerName of source's stream deliver from sequence
// target on: JetStream cannot move a consumer's start, so the durable
// consumer is deleted and created again, with its configuration, starting
// at target (DeliverByStartSequence; a Source reopening it keeps that
// start). It refuses while pull requests wait on it (ErrLiveConsumer): stop
// every Source first. Before the delete it creates ReplayMarker(consumerName)
// with the new start, and deletes it after the create: a crash in between
// leaves the marker, from which the next Source (or the same replay run
// again) creates the durable at target. Each consumer is therefore at its
// old or its new start, never at the Source's Config.Start. Committing a
// target equal to the consumer's position changes nothing.
func CommitReplay(ctx context.Context, js jetstream.JetStream, source, consumerName string, target uint64) error {
	s, err := js.Stream(ctx, StreamName(source))
	if err != nil {
		return fmt.Errorf("stream %s: %w", StreamName(source), err)
	}
	c, exists, err := lookupConsumer(ctx, s, consumerName)
	if err != nil {
		return fmt.Errorf("consumer %s: %w", consumerName, err)
	}
	ci := c.CachedInfo()
	if ci.NumWaiting > 0 {
		return fmt.Errorf("%w: consumer %s of stream %s has %d pull requests waiting (a Source is running); stop every consumer of it first", ErrLiveConsumer, consumerName, StreamName(source), ci.NumWaiting)
	}
	marker := ReplayMarker(consumerName)
	cfg := ci.Config
	cfg.Durable, cfg.Name = consumerName, ""
	cfg.DeliverPolicy, cfg.OptStartSeq, cfg.OptStartTime = jetstream.DeliverByStartSequencePolicy, target, nil
	if exists && (ci.Delivered.Stream+1 == target || ci.Delivered.Stream == 0 && ci.Config.OptStartSeq == target) {
		return deleteMarker(ctx, s, marker)
	}
	if exists {
		if err := deleteMarker(ctx, s, marker); err != nil {
			return err
		}
		mc := cfg
		mc.Durable, mc.Description = marker, fmt.Sprintf("oncely replay of %s to sequence %d under way: run it again to finish", consumerName, target)
		if _, err := s.CreateConsumer(ctx, mc); err != nil {
			return fmt.Errorf("creating the replay marker %s: %w", marker, err)
		}
		failpoint.Hit("nats-replay-marker-created")
		if err := s.DeleteConsumer(ctx, consumerName); err != nil {
			return fmt.Errorf("deleting consumer %s to recreate it at sequence %d: %w", consumerName, target, err)
		}
		failpoint.Hit("nats-replay-deleted")
	}
	if _, err := s.CreateConsumer(ctx, cfg); err != nil {
		return fmt.Errorf("recreating consumer %s at sequence %d (the marker %s keeps the new start: run the replay again): %w", consumerName, target, marker, err)
	}
	failpoint.Hit("nats-replay-created")
	return deleteMarker(ctx, s, marker)
}

// deleteMarker deletes the replay marker, if any.
func deleteMarker(ctx context.Context, s jetstream.Stream, marker string) error {
	if err := s.DeleteConsumer(ctx, marker); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return fmt.Errorf("deleting the replay marker %s: %w", marker, err)
	}
	return nil
}
