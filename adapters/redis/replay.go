package redis

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/oncely/oncely/adapters/internal/startpos"
)

// ErrLiveConsumers is returned (wrapped) by CommitReplay while consumers
// of the group read the stream.
var ErrLiveConsumers = errors.New("the consumer group has live consumers")

// ReplayLiveWithin is how recently a consumer of the group must have been
// delivered an entry (XINFO CONSUMERS idle) to count as live besides the
// Sources whose heartbeat lasts (see LiveKey): a reader that is no Source
// of this package has no heartbeat.
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
	// Live names the running Sources of the group (their heartbeat lasts,
	// see LiveKey) and the consumers delivered an entry within
	// ReplayLiveWithin.
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
	if p.Live, err = liveConsumers(ctx, client, stream, group, ReplayLiveWithin); err != nil {
		return ReplayPoint{}, err
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
// after it are delivered again. It refuses while a Source of the group runs
// (its heartbeat lasts: up to HeartbeatTTL after a crash) or a consumer of
// the group was delivered an entry within ReplayLiveWithin
// (ErrLiveConsumers): stop every Source first. The heartbeat check and the
// move are one script, so a Source that starts meanwhile either refuses it
// or reads from the new position. Entries still pending stay pending and
// are reclaimed as before. A crash leaves the old or the new position.
// Setting the same target again changes nothing.
func CommitReplay(ctx context.Context, client goredis.UniversalClient, stream, group, target string) error {
	return commitReplay(ctx, client, stream, group, target, ReplayLiveWithin)
}

// commitScript moves group ARGV[1] on stream KEYS[1] to ARGV[2] unless a
// heartbeat in the live set KEYS[2] lasts; it returns {} when it moved
// the group, else {the Source's name, its heartbeat's expiry, Redis's
// time}.
var commitScript = goredis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local live = redis.call('ZRANGEBYSCORE', KEYS[2], '(' .. now, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
if #live > 0 then
  return {live[1], live[2], tostring(now)}
end
redis.call('XGROUP', 'SETID', KEYS[1], ARGV[1], ARGV[2])
return {}
`)

func commitReplay(ctx context.Context, client goredis.UniversalClient, stream, group, target string, within time.Duration) error {
	consumers, err := client.XInfoConsumers(ctx, stream, group).Result()
	if err != nil {
		return fmt.Errorf("redis: consumers of group %s: %w", group, err)
	}
	for _, c := range consumers {
		if c.Idle < within {
			return fmt.Errorf("%w: consumer %s of group %s read %s ago; stop every consumer of the group first", ErrLiveConsumers, c.Name, group, c.Idle.Round(time.Millisecond))
		}
	}
	res, err := commitScript.Run(ctx, client, []string{stream, LiveKey(stream, group)}, group, target).StringSlice()
	if err != nil {
		return fmt.Errorf("redis: moving group %s on %s to %s: %w", group, stream, target, err)
	}
	if len(res) == 3 {
		expires, _ := strconv.ParseFloat(res[1], 64)
		now, _ := strconv.ParseInt(res[2], 10, 64)
		return fmt.Errorf("%w: consumer %s of group %s is running: its heartbeat lasts %s more (Close deletes it, a crashed Source's expires within %s of its last renewal); stop every consumer of the group first",
			ErrLiveConsumers, res[0], group, (time.Duration(int64(expires)-now) * time.Millisecond).Round(time.Millisecond), HeartbeatTTL)
	}
	return nil
}

// liveConsumers describes the running Sources of group on stream (their
// heartbeat lasts) and the other consumers delivered an entry within
// within (XINFO CONSUMERS), nil when there are none.
func liveConsumers(ctx context.Context, client goredis.UniversalClient, stream, group string, within time.Duration) ([]string, error) {
	running, err := runningSources(ctx, client, stream, group)
	if err != nil {
		return nil, err
	}
	consumers, err := client.XInfoConsumers(ctx, stream, group).Result()
	if err != nil {
		return nil, fmt.Errorf("redis: consumers of group %s: %w", group, err)
	}
	listed := make(map[string]goredis.XInfoConsumer, len(consumers))
	for _, c := range consumers {
		listed[c.Name] = c
	}
	var live []string
	for _, r := range running {
		read := "nothing read yet"
		if c, ok := listed[r.name]; ok {
			read = fmt.Sprintf("read %s ago, %d pending", c.Idle.Round(time.Millisecond), c.Pending)
			delete(listed, r.name)
		}
		live = append(live, fmt.Sprintf("%s (running: heartbeat for %s more, %s; a crashed Source's expires within %s)", r.name, r.expires.Round(time.Millisecond), read, HeartbeatTTL))
	}
	for _, c := range consumers {
		if _, ok := listed[c.Name]; ok && c.Idle < within {
			live = append(live, fmt.Sprintf("%s (read %s ago, %d pending)", c.Name, c.Idle.Round(time.Millisecond), c.Pending))
		}
	}
	return live, nil
}
