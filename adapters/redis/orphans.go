package redis

import (
	"context"
	"fmt"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/oncely/oncely/consumer"
)

// Orphaned entries. An XREADGROUP (or the receive script) that Redis runs
// but whose reply never reaches the Source — the connection closed under
// it, or the client retried the command on a new connection — leaves
// entries pending with this Source's consumer that it never received. Left
// alone they come back only when their lease ends, counted as a second
// delivery and after later entries of their key were handled. So every
// read of new entries (">") is preceded, in the same round trip, by a look
// at this consumer's pending entries above its read cursor (XPENDING …
// (cursor + COUNT consumer): the entries found there that the Source did
// not receive are orphans, delivered first, with their delivery counter
// (1 for an entry no handler saw), before any entry read after them.

// readCursor is the read position of one stream: every entry pending with
// this consumer whose ID is at most last was received by the Source.
type readCursor struct {
	last  string          // "" before the first entry
	above map[string]bool // entries above last the Source received by a reclaim
}

// start is the XPENDING start of the entries above the cursor.
func (c *readCursor) start() string {
	if c.last == "" {
		return "-"
	}
	return "(" + c.last
}

// advance moves the cursor to id when it is higher, forgetting the
// reclaimed entries it passes.
func (c *readCursor) advance(id string) {
	if id == "" || c.last != "" && !lessID(c.last, id) {
		return
	}
	c.last = id
	for a := range c.above {
		if !lessID(id, a) {
			delete(c.above, a)
		}
	}
}

// cursor returns the read cursor of stream; s.recv is held. Cursors start
// again after the group was recreated (recoverGroup): the new group's
// pending list starts empty and its IDs may restart below the old cursor.
func (s *Source) cursor(stream string) *readCursor {
	if epoch := s.groupEpoch.Load(); epoch != s.cursorEpoch {
		s.cursorEpoch, s.cursors = epoch, nil
	}
	c := s.cursors[stream]
	if c == nil {
		if s.cursors == nil {
			s.cursors = map[string]*readCursor{}
		}
		c = &readCursor{above: map[string]bool{}}
		s.cursors[stream] = c
	}
	return c
}

// noteReclaimed records reclaimed deliveries above their stream's cursor,
// so the next look at the pending entries does not take them for
// orphans; s.recv is held.
func (s *Source) noteReclaimed(ds []consumer.Delivery) {
	for _, d := range ds {
		d := d.(*delivery)
		if c := s.cursor(d.stream); c.last == "" || lessID(c.last, d.entryID) {
			c.above[d.entryID] = true
		}
	}
}

// pendingEntry is one entry of XPENDING's extended reply.
type pendingEntry struct {
	id    string
	count int64
}

// admit turns one read of stream into at most max deliveries, in stream
// order: first the orphans among pending (this consumer's pending entries
// above the cursor, listed before the read; full when the listing hit its
// COUNT), then fresh (the new entries the read returned) unless the
// listing was full. Entries it does not deliver stay pending above the
// cursor, found by the next look. s.recv is held.
func (s *Source) admit(ctx context.Context, stream string, pending []pendingEntry, full bool, fresh []goredis.XMessage, max int) ([]consumer.Delivery, error) {
	c := s.cursor(stream)
	var orphans []pendingEntry
	for _, p := range pending {
		if !c.above[p.id] {
			orphans = append(orphans, p)
		}
	}
	var ds []consumer.Delivery
	last := ""
	if len(orphans) > 0 {
		entries, err := s.fetch(ctx, stream, orphans)
		if err != nil {
			return nil, err
		}
		for i, p := range orphans {
			if len(ds) == max {
				c.advance(last)
				return ds, nil
			}
			last = p.id
			if e, ok := entries[i]; ok {
				ds = append(ds, s.newDelivery(stream, e, p.count))
			}
			// A ghost (deleted from the stream) is left to the
			// reclaim, which acks it.
		}
		s.log.WarnContext(ctx, "redis: entries read on a connection that failed were pending with this Source without reaching it; delivered now, before later ones",
			"entries", len(orphans), "first", orphans[0].id, "stream_key", stream)
	}
	if len(pending) > 0 {
		last = pending[len(pending)-1].id
	}
	if !full {
		for _, e := range fresh {
			if len(ds) == max {
				break
			}
			ds = append(ds, s.newDelivery(stream, e, 1))
			last = e.ID
		}
	}
	if last != "" {
		c.advance(last)
	}
	return ds, nil
}

// fetch reads the entries of orphans (one XRANGE each, one round trip),
// by their index in orphans; a ghost has none.
func (s *Source) fetch(ctx context.Context, stream string, orphans []pendingEntry) (map[int]goredis.XMessage, error) {
	pipe := s.client.Pipeline()
	cmds := make([]*goredis.XMessageSliceCmd, len(orphans))
	for i, p := range orphans {
		cmds[i] = pipe.XRange(ctx, stream, p.id, p.id)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("reading orphaned entries of %s: %w", stream, err)
	}
	out := make(map[int]goredis.XMessage, len(orphans))
	for i, cmd := range cmds {
		if es := cmd.Val(); len(es) > 0 {
			out[i] = es[0]
		}
	}
	return out, nil
}

// parsePending reads XPENDING's extended reply, as a script returns it.
func parsePending(v any) []pendingEntry {
	list, _ := v.([]any)
	out := make([]pendingEntry, 0, len(list))
	for _, item := range list {
		e, ok := item.([]any)
		if !ok || len(e) < 4 {
			continue
		}
		id, _ := e[0].(string)
		count, _ := e[3].(int64)
		out = append(out, pendingEntry{id: id, count: count})
	}
	return out
}

// pipelineWait bounds the wait of a blocking read sent in a pipeline: the
// client reads a pipeline's replies within its ReadTimeout, not the
// command's BLOCK, so the wait stays under half of it when the client's
// options say it (a *goredis.Client, *ClusterClient or *Ring).
func (s *Source) pipelineWait(wait time.Duration) time.Duration {
	var rt time.Duration
	switch c := s.client.(type) {
	case *goredis.Client:
		rt = c.Options().ReadTimeout
	case *goredis.ClusterClient:
		rt = c.Options().ReadTimeout
	case *goredis.Ring:
		rt = c.Options().ReadTimeout
	}
	switch {
	case rt == 0:
		rt = 3 * time.Second // go-redis's default
	case rt < 0:
		return wait // no read deadline
	}
	return max(min(wait, rt/2), time.Millisecond)
}
