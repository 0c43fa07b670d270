package adapters

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/oncely/oncely/adapters/kafka"
)

// Replayer rewinds an existing consumer of a log broker (Kafka) so that it
// reads again what it already consumed. Queue brokers (RabbitMQ, SQS,
// memory) have no position to move: their messages are gone once acked,
// and the way to run them again is a dead-letter redrive. AsReplayer tells
// which Brokers are Replayers.
type Replayer interface {
	// PlanReplay reports, per partition of source, where consumerName
	// resumes today and where it would after a replay to to, and how many
	// records that covers. It changes nothing. It refuses a source that
	// does not exist (ErrNoSource) and a consumer name that never read it
	// (ErrNoConsumer).
	PlanReplay(ctx context.Context, source, consumerName string, to ReplayTarget) (ReplayPlan, error)

	// ReplayIDs calls fn with the message IDs of the records plan covers,
	// in batches, in order per partition (the IDs the consumer claimed
	// them under, see kafka.Client.ReplayIDs).
	ReplayIDs(ctx context.Context, plan ReplayPlan, fn func(partition int32, ids []string) error) error

	// CommitReplay moves consumerName to plan's targets, refusing while
	// the consumer has live members (kafka.ErrLiveMembers, naming them);
	// see kafka.Client.CommitReplay for its atomicity. Committing the same
	// plan twice does the same as once.
	CommitReplay(ctx context.Context, plan ReplayPlan) error
}

// AsReplayer returns b's Replayer, and false when b's broker cannot replay.
func AsReplayer(b Broker) (Replayer, bool) {
	if c, ok := b.(idChecked); ok {
		b = c.Broker
	}
	r, ok := b.(Replayer)
	return r, ok
}

// ReplayTarget is where a replay rewinds to. The zero value is the oldest
// message kept.
type ReplayTarget struct {
	// Time, when set, rewinds to the first message stored at or after it.
	Time time.Time
	// Offsets, when set, rewinds the partitions named (partition → offset:
	// a Kafka offset, a JetStream stream sequence); the others stay where
	// they are.
	Offsets map[int32]int64
	// EntryIDs, when set, rewinds the Redis streams named (partition → entry
	// ID "<ms>-<seq>", the first entry delivered again); a Redis source is
	// one stream, partition 0.
	EntryIDs map[int32]string
}

// String writes t the way ParseReplayTarget reads it, partitions in order.
func (t ReplayTarget) String() string {
	switch {
	case len(t.Offsets) > 0 || len(t.EntryIDs) > 0:
		var parts []string
		for _, p := range slices.Sorted(maps.Keys(t.Offsets)) {
			parts = append(parts, fmt.Sprintf("%d:%d", p, t.Offsets[p]))
		}
		for _, p := range slices.Sorted(maps.Keys(t.EntryIDs)) {
			parts = append(parts, fmt.Sprintf("%d:%s", p, t.EntryIDs[p]))
		}
		return strings.Join(parts, ",")
	case !t.Time.IsZero():
		return t.Time.Format(time.RFC3339Nano)
	}
	return "earliest"
}

// ParseReplayTarget reads "earliest", an RFC 3339 time, or
// "<partition>:<position>[,<partition>:<position>…]" where a position is an
// offset (Kafka), a stream sequence (JetStream) or a Redis entry ID
// "<ms>-<seq>".
func ParseReplayTarget(s string) (ReplayTarget, error) {
	if s == "earliest" {
		return ReplayTarget{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return ReplayTarget{Time: t}, nil
	}
	var t ReplayTarget
	for part := range strings.SplitSeq(s, ",") {
		ps, pos, ok := strings.Cut(strings.TrimSpace(part), ":")
		p, perr := strconv.ParseInt(ps, 10, 32)
		if !ok || perr != nil || p < 0 {
			return ReplayTarget{}, fmt.Errorf("replay target %q: want earliest, an RFC 3339 time such as 2026-12-07T03:00:00Z, or partition:offset[,partition:offset…] (a Redis stream: 0:<ms>-<seq>, an entry ID)", s)
		}
		if _, dup := t.Offsets[int32(p)]; dup {
			return ReplayTarget{}, fmt.Errorf("replay target %q: partition %d given twice", s, p)
		}
		if _, dup := t.EntryIDs[int32(p)]; dup {
			return ReplayTarget{}, fmt.Errorf("replay target %q: partition %d given twice", s, p)
		}
		if o, err := strconv.ParseInt(pos, 10, 64); err == nil && o >= 0 {
			if t.Offsets == nil {
				t.Offsets = map[int32]int64{}
			}
			t.Offsets[int32(p)] = o
			continue
		}
		ms, seq, isID := strings.Cut(pos, "-")
		_, merr := strconv.ParseUint(ms, 10, 64)
		_, serr := strconv.ParseUint(seq, 10, 64)
		if !isID || merr != nil || serr != nil {
			return ReplayTarget{}, fmt.Errorf("replay target %q: partition %d: %q is neither an offset nor a Redis entry ID <ms>-<seq>", s, p, pos)
		}
		if t.EntryIDs == nil {
			t.EntryIDs = map[int32]string{}
		}
		t.EntryIDs[int32(p)] = pos
	}
	return t, nil
}

// ReplayPartition is one partition of a ReplayPlan: a Kafka partition
// (offsets), a JetStream stream (partition 0, stream sequences) or a Redis
// stream (partition 0, entry IDs in PositionID and TargetID).
type ReplayPartition struct {
	kafka.ReplayPartition
	// PositionID and TargetID are a Redis group's last-delivered entry ID
	// today and after the replay (its numeric fields then hold Covered
	// only).
	PositionID string `json:"position_id,omitempty"`
	TargetID   string `json:"target_id,omitempty"`
}

// ReplayPlan is what a replay would do.
type ReplayPlan struct {
	Source     string            `json:"source"`
	Consumer   string            `json:"consumer"`
	Broker     string            `json:"broker"`
	To         string            `json:"to"`
	Partitions []ReplayPartition `json:"partitions"`
	// Members are the consumer's live members: CommitReplay refuses while
	// there are any.
	Members []string `json:"members"`
}

// Covered counts the records the replay reads again, over every partition.
func (p ReplayPlan) Covered() int64 {
	var n int64
	for _, part := range p.Partitions {
		n += part.Covered
	}
	return n
}
