package nats

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/oncely/oncely/adapters/internal/startpos"
)

// maxStreamName is JetStream's limit on a stream name's length.
const maxStreamName = 255

// errCodeSubjectOverlap is JetStream's error code for a stream whose
// subjects another stream captures.
const errCodeSubjectOverlap = 10065

// ensureStream returns the stream named StreamName(subject), creating it
// (file storage, limits retention, replicas copies; 0 means 1) when absent.
// An existing stream must capture subject; its replica count is left as it is.
func ensureStream(ctx context.Context, js jetstream.JetStream, subject string, replicas int) (jetstream.Stream, error) {
	name := StreamName(subject)
	if len(name) > maxStreamName {
		return nil, fmt.Errorf("stream name %q (for subject %q) is %d bytes, over JetStream's %d; shorten the source or consumer name", name, subject, len(name), maxStreamName)
	}
	s, err := js.Stream(ctx, name)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		s, err = js.CreateStream(ctx, jetstream.StreamConfig{
			Name:      name,
			Subjects:  []string{subject},
			Storage:   jetstream.FileStorage,
			Retention: jetstream.LimitsPolicy,
			Replicas:  max(replicas, 1),
		})
		if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			s, err = js.Stream(ctx, name) // created meanwhile by another process
		}
	}
	if apiErr := (*jetstream.APIError)(nil); errors.As(err, &apiErr) && apiErr.ErrorCode == errCodeSubjectOverlap {
		return nil, fmt.Errorf("stream %s: %w; another stream captures %q, such as one named by an earlier version (see docs/brokers.md, \"Names\")", name, err, subject)
	}
	if err != nil {
		return nil, fmt.Errorf("stream %s: %w", name, err)
	}
	if subs := s.CachedInfo().Config.Subjects; !slices.Contains(subs, subject) {
		return nil, fmt.Errorf("stream %s exists with subjects %v, not capturing %q", name, subs, subject)
	}
	return s, nil
}

// ensureConsumer creates (or updates) the durable pull consumer of cfg on
// stream: explicit acks, at most maxAckPending unacknowledged deliveries
// (-1: no limit) and no server-side delivery limit. The limit is the
// Source's (Config.MaxDeliver): a server that stops delivering a message
// after MaxDeliver drops it for good when its last delivery is not settled
// (a refused dead-letter copy, a Close or a crash in that window, a replica
// configured with a higher limit), so the server must always deliver again
// what was not acked. A consumer created with a server-side limit, by an
// earlier version, is updated to none. A consumer that does not exist is
// created starting at start, or at the start of its ReplayMarker when a
// replay recreating it was interrupted (the marker is then deleted); an
// existing one keeps where it started (the server refuses to change it).
func ensureConsumer(ctx context.Context, s jetstream.Stream, cfg Config, maxAckPending int, start startpos.Position) (jetstream.Consumer, error) {
	cc := jetstream.ConsumerConfig{
		Durable:       cfg.Consumer,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       cfg.AckWait,
		MaxDeliver:    -1,
		MaxAckPending: maxAckPending,
		DeliverPolicy: jetstream.DeliverAllPolicy,
	}
	existing, _, err := lookupConsumer(ctx, s, cfg.Consumer)
	switch {
	case err == nil: // the durable, or an interrupted replay's marker: its start
		was := existing.CachedInfo().Config
		cc.DeliverPolicy, cc.OptStartSeq, cc.OptStartTime = was.DeliverPolicy, was.OptStartSeq, was.OptStartTime
	case !errors.Is(err, jetstream.ErrConsumerNotFound):
		return nil, fmt.Errorf("consumer %s on stream %s: %w", cfg.Consumer, s.CachedInfo().Config.Name, err)
	case start.Latest:
		cc.DeliverPolicy = jetstream.DeliverNewPolicy
	case !start.Time.IsZero():
		t := start.Time
		cc.DeliverPolicy, cc.OptStartTime = jetstream.DeliverByStartTimePolicy, &t
	}
	c, err := s.CreateOrUpdateConsumer(ctx, cc)
	if err != nil {
		return nil, fmt.Errorf("consumer %s on stream %s: %w", cfg.Consumer, s.CachedInfo().Config.Name, err)
	}
	if existing != nil && existing.CachedInfo().Name != cfg.Consumer {
		_ = deleteMarker(ctx, s, existing.CachedInfo().Name) // adopted; a failure leaves a marker the next replay deletes
	}
	return c, nil
}
