package redis

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/oncely/oncely/consumer"
)

// reclaimCalls bounds the XAUTOCLAIM calls one Receive makes (each scans up
// to ten times its COUNT of pending entries); a pass over a long pending
// list goes on in the next Receive.
const reclaimCalls = 16

// housekeeping is the periodic work of a Source, done inside Receive (so a
// Source not asked for deliveries claims none): reclaiming entries whose
// lease ended, deleting dead consumers, trimming the stream.
type housekeeping struct {
	started     bool
	nextReclaim time.Time
	pass        []string // streams the reclaim pass still has to scan
	cursor      string
	nextReap    time.Time
	nextTrim    time.Time
	// nextRetryLook is when Receive next moves due retries and reads the
	// retry stream.
	nextRetryLook time.Time
}

// Stats counts what a Source's housekeeping found.
type Stats struct {
	// Reclaimed counts entries taken over from a consumer whose lease
	// ended (a crashed consumer's, or released by a Close).
	Reclaimed int64
	// Ghosts counts pending entries whose stream entry had been deleted
	// or trimmed: acked and dropped from the pending list, never
	// delivered.
	Ghosts int64
}

// Stats returns the Source's counters.
func (s *Source) Stats() Stats {
	return Stats{Reclaimed: s.reclaimed.Load(), Ghosts: s.ghosts.Load()}
}

// run does what is due and returns reclaimed deliveries, if any.
func (h *housekeeping) run(ctx context.Context, s *Source, max int) ([]consumer.Delivery, error) {
	now := time.Now()
	if !h.started {
		h.started = true
		h.nextReap, h.nextTrim = now, now.Add(s.cfg.TrimInterval)
	}
	if h.pass == nil && !now.Before(h.nextReclaim) {
		h.pass, h.cursor = []string{s.retry, s.cfg.Stream}, "0-0"
		h.nextReclaim = now.Add(s.cfg.ReclaimInterval)
	}
	if !now.Before(h.nextReap) {
		h.nextReap = now.Add(s.cfg.ReapIdle / 4)
		if err := s.reap(ctx); err != nil {
			if !s.recoverGroup(ctx, err) {
				s.log.WarnContext(ctx, "redis: deleting idle consumers failed", "error", err)
			}
		}
	}
	if s.cfg.TrimInterval > 0 && !now.Before(h.nextTrim) {
		h.nextTrim = now.Add(s.cfg.TrimInterval)
		if err := s.trim(ctx); err != nil {
			if !s.recoverGroup(ctx, err) {
				s.log.WarnContext(ctx, "redis: trimming the stream failed", "error", err)
			}
		}
	}
	for calls := 0; len(h.pass) > 0 && calls < reclaimCalls; calls++ {
		stream := h.pass[0]
		ds, next, err := s.reclaim(ctx, stream, h.cursor, max)
		if err != nil {
			return nil, err
		}
		if next == "0-0" {
			h.pass, h.cursor = h.pass[1:], "0-0"
		} else {
			h.cursor = next
		}
		if len(h.pass) == 0 {
			h.pass = nil
		}
		if len(ds) > 0 {
			s.noteReclaimed(ds)
			return ds, nil
		}
	}
	return nil, nil
}

// reclaim claims up to max entries of stream whose lease ended, from
// cursor, and returns them and the next cursor. Ghost entries are acked and
// counted.
func (s *Source) reclaim(ctx context.Context, stream, cursor string, max int) ([]consumer.Delivery, string, error) {
	res, err := reclaimScript.Run(ctx, s.client, []string{stream},
		s.cfg.Consumer, s.name, s.cfg.Lease.Milliseconds(), cursor, max).Slice()
	if err != nil {
		return nil, "", fmt.Errorf("reclaiming entries of %s: %w", stream, err)
	}
	if len(res) != 4 {
		return nil, "", fmt.Errorf("unexpected reclaim script reply %v", res)
	}
	next, _ := res[0].(string)
	if ghosts, _ := res[2].([]any); len(ghosts) > 0 {
		s.ghosts.Add(int64(len(ghosts)))
		s.log.WarnContext(ctx, "redis: pending entries were deleted from the stream before they were processed (trimmed or XDEL); acked and dropped from the pending list",
			"entries", len(ghosts), "first", ghosts[0], "stream_key", stream)
	}
	counts, _ := res[3].([]any)
	entries := parseEntries(res[1])
	ds := make([]consumer.Delivery, 0, len(entries))
	for i, e := range entries {
		count := int64(1)
		if i < len(counts) {
			count, _ = counts[i].(int64)
		}
		ds = append(ds, s.newDelivery(stream, e, count))
	}
	s.reclaimed.Add(int64(len(ds)))
	return ds, next, nil
}

// reap deletes consumers of the group idle for more than ReapIdle that
// hold nothing pending (atomically checked: delConsumerScript).
func (s *Source) reap(ctx context.Context) error {
	list, err := s.client.XInfoConsumers(ctx, s.cfg.Stream, s.cfg.Consumer).Result()
	if err != nil {
		return err
	}
	for _, c := range list {
		if c.Name == s.name || c.Pending > 0 || c.Idle < s.cfg.ReapIdle {
			continue
		}
		if err := s.deleteConsumer(ctx, c.Name); err != nil {
			return err
		}
	}
	return nil
}

// trim deletes the entries of the source stream below the oldest one any
// group still needs: its oldest pending entry or, with none pending, its
// last delivered entry (entries after it were not delivered yet). Groups
// only move forward, so a bound computed here is still safe when XTRIM
// runs; a group created at an ID below it meanwhile (XGROUP CREATE … 0)
// misses what was trimmed.
func (s *Source) trim(ctx context.Context) error {
	groups, err := s.client.XInfoGroups(ctx, s.cfg.Stream).Result()
	if err != nil {
		return err
	}
	var bound string
	for _, g := range groups {
		need := g.LastDeliveredID
		if g.Pending > 0 {
			p, err := s.client.XPendingExt(ctx, &goredis.XPendingExtArgs{Stream: s.cfg.Stream, Group: g.Name, Start: "-", End: "+", Count: 1}).Result()
			if err != nil {
				return err
			}
			if len(p) > 0 {
				need = p[0].ID
			}
		}
		if bound == "" || lessID(need, bound) {
			bound = need
		}
	}
	if bound == "" || bound == "0-0" {
		return nil
	}
	return s.client.XTrimMinID(ctx, s.cfg.Stream, bound).Err()
}

// lessID orders stream entry IDs ("<ms>-<seq>").
func lessID(a, b string) bool {
	am, as := splitID(a)
	bm, bs := splitID(b)
	return am < bm || am == bm && as < bs
}

func splitID(id string) (uint64, uint64) {
	ms, seq, _ := strings.Cut(id, "-")
	m, _ := strconv.ParseUint(ms, 10, 64)
	q, _ := strconv.ParseUint(seq, 10, 64)
	return m, q
}
