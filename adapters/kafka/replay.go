package kafka

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/oncely/oncely/consumer"
)

// ErrLiveMembers is returned (wrapped, in a *LiveMembersError) by
// CommitReplay when the group has members: moving the offsets of a group
// that is consuming would race its own commits.
var ErrLiveMembers = errors.New("the consumer group has live members")

// LiveMembersError names the live members of a group a replay refused.
type LiveMembersError struct {
	Group   string
	Members []string // "member-id (client-id@host)", or the instance ID when static
}

func (e *LiveMembersError) Error() string {
	return fmt.Sprintf("%v: group %s has %d: %s; stop every consumer of the group first", ErrLiveMembers, e.Group, len(e.Members), strings.Join(e.Members, ", "))
}

func (e *LiveMembersError) Unwrap() error { return ErrLiveMembers }

// ErrReplayForward is returned (wrapped) by PlanReplay for an explicit
// offset beyond the group's position: moving there would skip records.
var ErrReplayForward = errors.New("replay target is beyond the group's position")

// ReplayPartition is one partition of a replay plan.
type ReplayPartition struct {
	Partition int32 `json:"partition"`
	// Committed is the group's committed offset, -1 when none.
	Committed int64 `json:"committed"`
	// Position is where the group resumes today: Committed, or LogStart
	// when nothing was committed.
	Position int64 `json:"position"`
	// Target is where the group resumes after the replay (never beyond
	// Position).
	Target int64 `json:"target"`
	// LogStart and LogEnd are the partition's oldest kept offset and its
	// end (the next offset written).
	LogStart int64 `json:"log_start"`
	LogEnd   int64 `json:"log_end"`
	// Covered counts the offsets from Target up to Position: the records
	// read again.
	Covered int64 `json:"covered"`
	// EarliestAvailable is set when the target was before the oldest record
	// kept (deleted by retention): the replay starts at LogStart instead.
	EarliestAvailable bool `json:"earliest_available"`
}

// moves reports whether committing p changes the group's position.
func (p ReplayPartition) moves() bool { return p.Target != p.Position }

// PlanReplay computes, per partition of topic, where group would resume
// after a replay to at (zero: the oldest record kept) or, when offsets is
// not empty, to those offsets (partitions not named stay where they are).
// A target after the group's position leaves the partition there (a time
// after it) or fails with ErrReplayForward (an explicit offset). It reads
// offsets only and changes nothing. ErrNoTopic when topic does not exist.
func (c *Client) PlanReplay(ctx context.Context, topic, group string, at time.Time, offsets map[int32]int64) ([]ReplayPartition, error) {
	starts, err := c.adm.ListStartOffsets(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("kafka: start offsets of %s: %w", topic, err)
	}
	if errors.Is(starts.Error(), kerr.UnknownTopicOrPartition) {
		return nil, fmt.Errorf("%w: %s", ErrNoTopic, topic)
	}
	ends, err := c.adm.ListEndOffsets(ctx, topic)
	if err == nil {
		err = errors.Join(starts.Error(), ends.Error())
	}
	if err != nil {
		return nil, fmt.Errorf("kafka: offsets of %s: %w", topic, err)
	}
	var byTime kadm.ListedOffsets
	if !at.IsZero() && len(offsets) == 0 {
		if byTime, err = c.adm.ListOffsetsAfterMilli(ctx, at.UnixMilli(), topic); err == nil {
			err = byTime.Error()
		}
		if err != nil {
			return nil, fmt.Errorf("kafka: offsets of %s at %s: %w", topic, at.Format(time.RFC3339), err)
		}
	}
	committed, err := c.adm.FetchOffsetsForTopics(ctx, group, topic)
	if err != nil && !errors.Is(err, kerr.GroupIDNotFound) {
		return nil, fmt.Errorf("kafka: committed offsets of group %s: %w", group, err)
	}
	var out []ReplayPartition
	ends.Each(func(e kadm.ListedOffset) {
		st, _ := starts.Lookup(topic, e.Partition)
		p := ReplayPartition{Partition: e.Partition, Committed: -1, LogStart: st.Offset, LogEnd: e.Offset}
		p.Position = p.LogStart
		if o, ok := committed.Lookup(topic, e.Partition); ok && o.Err == nil && o.At >= 0 {
			p.Committed, p.Position = o.At, o.At
		}
		p.Target = p.LogStart
		p.EarliestAvailable = p.LogStart > 0
		switch {
		case len(offsets) > 0:
			o, named := offsets[e.Partition]
			p.Target, p.EarliestAvailable = p.Position, false
			if named {
				p.Target = max(o, p.LogStart)
				p.EarliestAvailable = o < p.LogStart
			}
		case !at.IsZero():
			t, _ := byTime.Lookup(topic, e.Partition)
			p.Target = max(t.Offset, p.LogStart)
			// The record found is the oldest kept and is younger than
			// at: older ones may have been deleted.
			p.EarliestAvailable = p.Target == p.LogStart && p.LogStart > 0 && t.Timestamp > at.UnixMilli()
		}
		p.Target = min(p.Target, p.Position)
		p.Covered = p.Position - p.Target
		out = append(out, p)
	})
	slices.SortFunc(out, func(a, b ReplayPartition) int { return int(a.Partition - b.Partition) })
	var errs []error
	for n, o := range offsets {
		i := slices.IndexFunc(out, func(p ReplayPartition) bool { return p.Partition == n })
		switch {
		case i < 0:
			errs = append(errs, fmt.Errorf("partition %d: %s has %d partitions", n, topic, len(out)))
		case o > out[i].Position:
			errs = append(errs, fmt.Errorf("%w: partition %d: offset %d is after the group's position %d, and moving there would skip %d records", ErrReplayForward, n, o, out[i].Position, o-out[i].Position))
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("kafka: replay of %s: %w", topic, errors.Join(errs...))
	}
	return out, nil
}

// GroupMembers lists the live members of group (none when it does not
// exist or is empty), each as "member-id (client-id@host)", or with its
// static instance ID.
func (c *Client) GroupMembers(ctx context.Context, group string) ([]string, error) {
	described, err := c.adm.DescribeGroups(ctx, group)
	if err != nil {
		return nil, fmt.Errorf("kafka: describing group %s: %w", group, err)
	}
	g, ok := described[group]
	if !ok || errors.Is(g.Err, kerr.GroupIDNotFound) {
		return nil, nil
	}
	if g.Err != nil {
		return nil, fmt.Errorf("kafka: describing group %s: %w", group, g.Err)
	}
	var out []string
	for _, m := range g.Members {
		name := m.MemberID
		if m.InstanceID != nil && *m.InstanceID != "" {
			name = "instance " + *m.InstanceID
		}
		out = append(out, fmt.Sprintf("%s (%s@%s)", name, m.ClientID, m.ClientHost))
	}
	slices.Sort(out)
	return out, nil
}

// CommitReplay commits the Target of every partition of parts that moves,
// for group, in one OffsetCommit request, after checking that the group has
// no live members (a *LiveMembersError names them). Kafka applies a commit
// per partition atomically: a crash leaves each partition at its old or its
// new offset. The broker refuses the commit too when a member joined after
// the check. Committing the same plan again changes nothing.
func (c *Client) CommitReplay(ctx context.Context, topic, group string, parts []ReplayPartition) error {
	members, err := c.GroupMembers(ctx, group)
	if err != nil {
		return err
	}
	if len(members) > 0 {
		return &LiveMembersError{Group: group, Members: members}
	}
	offsets := kadm.Offsets{}
	for _, p := range parts {
		if p.moves() || (p.Committed >= 0 && p.Committed != p.Target) {
			offsets.Add(kadm.Offset{Topic: topic, Partition: p.Partition, At: p.Target, LeaderEpoch: -1})
		}
	}
	if len(offsets) == 0 {
		return nil
	}
	err = c.adm.CommitAllOffsets(ctx, group, offsets)
	if errors.Is(err, kerr.UnknownMemberID) || errors.Is(err, kerr.IllegalGeneration) || errors.Is(err, kerr.RebalanceInProgress) {
		members, _ := c.GroupMembers(ctx, group)
		return fmt.Errorf("kafka: committing the replay offsets: %w", &LiveMembersError{Group: group, Members: members})
	}
	if err != nil {
		return fmt.Errorf("kafka: committing the replay offsets of group %s: %w", group, err)
	}
	return nil
}

// replayIdle is how long ReplayIDs waits for a record of a partition not
// yet read to its Position before it takes the partition as read: fetches
// wait at most FetchMaxWaitDefault for records.
const replayIdle = 30 * time.Second

// ReplayIDs reads the records parts cover (from Target up to Position, per
// partition) and calls fn with the message IDs of each batch read, in
// offset order per partition: the message-id header, else ce_id, else the
// derived "<topic>/<partition>/<offset>" (the ID of a consumer with
// Config.DeriveID; no claim exists under it otherwise). It stops at the
// first error of fn or ctx, and once no record came for replayIdle (30s):
// the rest of the range then holds no record a consumer would get
// (transaction markers, records removed by compaction).
func (c *Client) ReplayIDs(ctx context.Context, topic string, parts []ReplayPartition, fn func(partition int32, ids []string) error) error {
	from := map[int32]kgo.Offset{}
	until := map[int32]int64{}
	for _, p := range parts {
		if p.Covered > 0 {
			from[p.Partition] = kgo.NewOffset().At(p.Target)
			until[p.Partition] = p.Position
		}
	}
	if len(from) == 0 {
		return nil
	}
	cl, err := kgo.NewClient(append(c.cl.Opts(), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: from}),
		kgo.FetchMaxBytes(64<<20), kgo.FetchMaxPartitionBytes(16<<20))...)
	if err != nil {
		return fmt.Errorf("kafka: %w", err)
	}
	defer cl.Close()
	for len(until) > 0 {
		pctx, cancel := context.WithTimeout(ctx, replayIdle)
		fs := cl.PollFetches(pctx)
		cancel()
		if err := ctx.Err(); err != nil {
			return err
		}
		if fs.Empty() && pctx.Err() != nil {
			// The rest of the covered offsets hold no records the
			// client returns (transaction markers, compacted records).
			return nil
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) {
			ferr = errors.Join(ferr, fmt.Errorf("kafka: reading %s[%d]: %w", t, p, err))
		})
		if ferr != nil {
			return ferr
		}
		var perr error
		fs.EachPartition(func(fp kgo.FetchTopicPartition) {
			end, open := until[fp.Partition]
			if !open || perr != nil {
				return
			}
			ids := make([]string, 0, len(fp.Records))
			for _, r := range fp.Records {
				if r.Offset >= end {
					break
				}
				ids = append(ids, recordID(r))
			}
			if len(fp.Records) > 0 && fp.Records[len(fp.Records)-1].Offset >= end-1 {
				delete(until, fp.Partition)
				cl.PauseFetchPartitions(map[string][]int32{topic: {fp.Partition}})
			}
			if len(ids) > 0 {
				perr = fn(fp.Partition, ids)
			}
		})
		if perr != nil {
			return perr
		}
	}
	return nil
}

// recordID is the message ID a Source with the default IDHeaders would
// give r, falling back to the ID Config.DeriveID derives.
func recordID(r *kgo.Record) string {
	for _, name := range []string{consumer.HeaderMessageID, HeaderCloudEventsID} {
		for _, h := range r.Headers {
			if h.Key == name && len(h.Value) > 0 {
				return string(h.Value)
			}
		}
	}
	return r.Topic + "/" + strconv.FormatInt(int64(r.Partition), 10) + "/" + strconv.FormatInt(r.Offset, 10)
}
