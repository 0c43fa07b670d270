package redis

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/oncely/oncely/adapters/internal/startpos"
)

// ErrLiveConsumers is returned (wrapped) by CommitReplay while consumers
// of the group read the stream.
var ErrLiveConsumers = errors.New("the consumer group has live consumers")

// ReplayLiveWithin is how recently a consumer of the group must have read
// (XINFO CONSUMERS idle) to count as live: a running Source reads at least
// every Config.Block.
const ReplayLiveWithin = 10 * time.Second

// ReplayPoint is a consumer group's replay plan on its source stream, in
// entry IDs.
type ReplayPoint struct {
	// Position is the group's last-delivered ID: it goes on after it.
	Position string
	// Target is the last-delivered ID after the replay (never beyond
	// Position): the group delivers the entries after it again.
	Target string
	// Covered counts the entries after Target up to Position.
	Covered int64
	// EarliestAvailable is set when the target was before the oldest entry
	// kept while older ones were deleted (trimmed): the replay starts at
	// the oldest kept.
	EarliestAvailable bool
	// Live names the consumers that read within ReplayLiveWithin.
	Live []string
}

// ErrReplayForward is returned (wrapped) by PlanReplay for an entry ID
// target after the stream's last entry, or after the group's position with
// entries in between: moving there would skip them.
var ErrReplayForward = errors.New("replay target is beyond the group's position")

// PlanReplay computes where group would go on on stream after a replay to
// the first entry added at or after at (zero: the oldest kept) or, when
// entryID is not empty, to the entry with that ID (the first after it when
// there is none): the group delivers it again. A time after the group's
// position leaves the group there. An entry ID after the stream's last
// entry is refused, as is one after the group's position with entries in
// between (ErrReplayForward); one after the position with no entry in
// between leaves the group there. It reads the covered range's IDs to
// count them and changes nothing.
func PlanReplay(ctx context.Context, client goredis.UniversalClient, stream, group string, at time.Time, entryID string) (ReplayPoint, error) {
	groups, err := client.XInfoGroups(ctx, stream).Result()
	if err != nil {
		return ReplayPoint{}, fmt.Errorf("redis: groups of %s: %w", stream, err)
	}
	var p ReplayPoint
	found := false
	for _, g := range groups {
		if g.Name == group {
			p.Position, found = g.LastDeliveredID, true
		}
	}
	if !found {
		return ReplayPoint{}, fmt.Errorf("redis: no consumer group %s on %s", group, stream)
	}
	info, err := client.XInfoStream(ctx, stream).Result()
	if err != nil {
		return ReplayPoint{}, fmt.Errorf("redis: stream %s: %w", stream, err)
	}
	p.Target = groupStartID(startpos.Position{Time: at})
	if entryID != "" {
		if p.Target, err = entryTarget(ctx, client, stream, p.Position, entryID, info); err != nil {
			return ReplayPoint{}, err
		}
	}
	if lessID(p.Position, p.Target) {
		p.Target = p.Position
	}
	p.EarliestAvailable = info.Length > 0 && info.EntriesAdded > info.Length && lessID(p.Target, info.FirstEntry.ID)
	err = ReplayIDs(ctx, client, stream, "", p.Target, p.Position, func(ids []string) error {
		p.Covered += int64(len(ids))
		return nil
	})
	if err != nil {
		return ReplayPoint{}, err
	}
	consumers, err := client.XInfoConsumers(ctx, stream, group).Result()
	if err != nil {
		return ReplayPoint{}, fmt.Errorf("redis: consumers of group %s: %w", group, err)
	}
	for _, c := range consumers {
		if c.Idle < ReplayLiveWithin {
			p.Live = append(p.Live, fmt.Sprintf("%s (read %s ago, %d pending)", c.Name, c.Idle.Round(time.Millisecond), c.Pending))
		}
	}
	return p, nil
}

// entryTarget returns the last-delivered ID that makes a group deliver
// entryID (or the first entry after it) next, refusing an ID after the
// stream's last entry or one whose move from position would skip entries.
func entryTarget(ctx context.Context, client goredis.UniversalClient, stream, position, entryID string, info *goredis.XInfoStream) (string, error) {
	last := info.LastEntry.ID
	if info.Length == 0 || lessID(last, entryID) {
		return "", fmt.Errorf("%w: entry ID %s is after the last entry of stream %s (%s): it names no entry", ErrReplayForward, entryID, stream, cmp.Or(last, "none"))
	}
	target := previousID(entryID)
	if !lessID(position, target) {
		return target, nil
	}
	skipped, err := client.XRange(ctx, stream, "("+position, target).Result()
	if err != nil {
		return "", fmt.Errorf("redis: reading %s: %w", stream, err)
	}
	if len(skipped) > 0 {
		return "", fmt.Errorf("%w: entry ID %s is after the group's position %s, and moving there would skip %d entries", ErrReplayForward, entryID, position, len(skipped))
	}
	return position, nil
}

// previousID is the greatest entry ID below id ("0-0" for "0-0"): a group
// whose last-delivered ID it is delivers id next.
func previousID(id string) string {
	ms, seq := splitID(id)
	switch {
	case seq > 0:
		return fmt.Sprintf("%d-%d", ms, seq-1)
	case ms > 0:
		return fmt.Sprintf("%d-%d", ms-1, uint64(math.MaxUint64))
	}
	return "0-0"
}

// ReplayIDs calls fn with batches of the message IDs (field idField, default
// IDFieldDefault) of stream's entries after from up to and including to,
// in order.
func ReplayIDs(ctx context.Context, client goredis.UniversalClient, stream, idField, from, to string, fn func(ids []string) error) error {
	if idField == "" {
		idField = IDFieldDefault
	}
	for lessID(from, to) {
		entries, err := client.XRangeN(ctx, stream, "("+from, to, 10_000).Result()
		if err != nil {
			return fmt.Errorf("redis: reading %s: %w", stream, err)
		}
		if len(entries) == 0 {
			return nil
		}
		ids := make([]string, len(entries))
		for i, e := range entries {
			ids[i], _ = e.Values[idField].(string)
		}
		if err := fn(ids); err != nil {
			return err
		}
		from = entries[len(entries)-1].ID
	}
	return nil
}

// CommitReplay moves group on stream to target (XGROUP SETID): the entries
// after it are delivered again. It refuses while consumers of the group
// read (ErrLiveConsumers): stop every Source first. Entries still pending
// stay pending and are reclaimed as before. One command: a crash leaves
// the old or the new position. Setting the same target again changes
// nothing.
func CommitReplay(ctx context.Context, client goredis.UniversalClient, stream, group, target string) error {
	consumers, err := client.XInfoConsumers(ctx, stream, group).Result()
	if err != nil {
		return fmt.Errorf("redis: consumers of group %s: %w", group, err)
	}
	for _, c := range consumers {
		if c.Idle < ReplayLiveWithin {
			return fmt.Errorf("%w: consumer %s of group %s read %s ago; stop every consumer of the group first", ErrLiveConsumers, c.Name, group, c.Idle.Round(time.Millisecond))
		}
	}
	if err := client.XGroupSetID(ctx, stream, group, target).Err(); err != nil {
		return fmt.Errorf("redis: moving group %s on %s to %s: %w", group, stream, target, err)
	}
	return nil
}
