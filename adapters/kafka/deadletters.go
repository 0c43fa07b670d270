package kafka

import (
	"context"
	"encoding/base64"
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

// A dead-letter topic is an append-only log: a record cannot be deleted once
// a redrive moved it back to its source or a purge discarded it. Removal is
// therefore recorded, not done. The consumer group RedriveGroup(dlq) commits,
// per partition, the offset after the contiguous run of removed records, and
// in the commit's metadata the offsets of removed records beyond it (a
// redrive that skipped a record can still remove the ones after it). Every
// reader — DeadLetterReader, Backlog's dead-letter depth — skips both, so a
// removed record is never listed, counted or redriven again.
//
// Kafka bounds commit metadata (offset.metadata.max.bytes, 4096 bytes by
// default). Removed offsets are written as ranges ("5-9,12") or, when the
// ranges do not fit in removedMetadataMax and a bitmap keeps more of them,
// as a bitmap of the offsets after the committed one (base64, one bit per
// record: about 24,000 records, however scattered the records left are; a
// redrive of 10,000 of 12,000 dead letters with the 2,000 others spread
// through them needs 8 KB of ranges, 2 KB of bitmap). Should they still not
// fit, the highest are left out: those records are listed again, and a
// second redrive of one is absorbed by the idempotency claim of its ID.

// RedriveGroup names the consumer group whose committed offsets on a
// dead-letter topic record which of its records were removed (redriven or
// purged): "<dead-letter topic>.redrive". No consumer joins it.
func RedriveGroup(deadLetterTopic string) string { return deadLetterTopic + ".redrive" }

const (
	removedMetadataPrefix = "oncely-removed:"
	removedBitsPrefix     = "oncely-removed-bits:"
	removedMetadataMax    = 4000
)

// removals is one dead-letter partition's removal record.
type removals struct {
	at   int64          // every record below at is removed
	past map[int64]bool // removed records at or beyond at
}

// parseRemovals reads a committed offset and its metadata; metadata oncely
// did not write holds no removals.
func parseRemovals(at int64, metadata string) removals {
	r := removals{at: max(at, 0), past: map[int64]bool{}}
	if bits, ok := strings.CutPrefix(metadata, removedBitsPrefix); ok {
		raw, err := base64.RawURLEncoding.DecodeString(bits)
		if err != nil {
			return r
		}
		for i := range len(raw) * 8 {
			if raw[i/8]&(1<<(i%8)) != 0 {
				r.past[r.at+int64(i)] = true
			}
		}
		r.advance()
		return r
	}
	list, ok := strings.CutPrefix(metadata, removedMetadataPrefix)
	if !ok || list == "" {
		return r
	}
	for part := range strings.SplitSeq(list, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		from, err1 := strconv.ParseInt(lo, 10, 64)
		to, err2 := from, error(nil)
		if isRange {
			to, err2 = strconv.ParseInt(hi, 10, 64)
		}
		if err1 != nil || err2 != nil || to < from || to-from > 1<<20 {
			return removals{at: r.at, past: map[int64]bool{}}
		}
		for o := from; o <= to; o++ {
			if o >= r.at {
				r.past[o] = true
			}
		}
	}
	r.advance()
	return r
}

// removed reports whether the record at off was removed.
func (r removals) removed(off int64) bool { return off < r.at || r.past[off] }

// add records the record at off as removed.
func (r *removals) add(off int64) {
	if off >= r.at {
		r.past[off] = true
		r.advance()
	}
}

func (r *removals) advance() {
	for r.past[r.at] {
		delete(r.past, r.at)
		r.at++
	}
}

// metadata is the commit metadata for the removals beyond at, at most
// removedMetadataMax bytes: ascending ranges, or a bitmap when the ranges
// do not fit and the bitmap keeps more removed offsets.
func (r removals) metadata() string {
	if len(r.past) == 0 {
		return ""
	}
	offs := make([]int64, 0, len(r.past))
	for o := range r.past {
		offs = append(offs, o)
	}
	slices.Sort(offs)
	ranges, kept := rangesMetadata(offs)
	if kept == len(offs) {
		return ranges
	}
	if bits, bkept := r.bitsMetadata(offs); bkept > kept {
		return bits
	}
	return ranges
}

// bitsMetadata is the bitmap form of offs (ascending, all beyond at): bit
// i is offset at+i. It returns how many of offs it keeps.
func (r removals) bitsMetadata(offs []int64) (string, int) {
	maxBits := int64((removedMetadataMax - len(removedBitsPrefix)) / 4 * 3 * 8)
	var raw []byte
	kept := 0
	for _, o := range offs {
		i := o - r.at
		if i >= maxBits {
			break
		}
		for int64(len(raw)) <= i/8 {
			raw = append(raw, 0)
		}
		raw[i/8] |= 1 << (i % 8)
		kept++
	}
	return removedBitsPrefix + base64.RawURLEncoding.EncodeToString(raw), kept
}

// rangesMetadata is the ranges form of offs (ascending), cut at
// removedMetadataMax bytes. It returns how many of offs it keeps.
func rangesMetadata(offs []int64) (string, int) {
	kept := 0
	var b strings.Builder
	b.WriteString(removedMetadataPrefix)
	for i := 0; i < len(offs); {
		j := i
		for j+1 < len(offs) && offs[j+1] == offs[j]+1 {
			j++
		}
		part := strconv.FormatInt(offs[i], 10)
		if j > i {
			part += "-" + strconv.FormatInt(offs[j], 10)
		}
		if i > 0 {
			part = "," + part
		}
		if b.Len()+len(part) > removedMetadataMax {
			break
		}
		b.WriteString(part)
		kept += j - i + 1
		i = j + 1
	}
	return b.String(), kept
}

// left counts the records of [from, end) not removed.
func (r removals) left(from, end int64) int64 {
	from = max(from, r.at)
	n := max(0, end-from)
	for o := range r.past {
		if o >= from && o < end {
			n--
		}
	}
	return n
}

// fetchRemovals returns the removal record of every partition of dlq that
// has one.
func fetchRemovals(ctx context.Context, adm *kadm.Client, dlq string) (map[int32]removals, error) {
	offs, err := adm.FetchOffsets(ctx, RedriveGroup(dlq))
	if errors.Is(err, kerr.GroupIDNotFound) {
		return map[int32]removals{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("kafka: fetching the removals recorded for %s: %w", dlq, err)
	}
	out := map[int32]removals{}
	offs.Each(func(o kadm.OffsetResponse) {
		if o.Topic == dlq && o.Err == nil {
			out[o.Partition] = parseRemovals(o.At, o.Metadata)
		}
	})
	return out, nil
}

// DeadLetterReader reads the records of a dead-letter topic that were not
// removed, each once, from the records present when it was opened; records
// dead-lettered later are left for the next reader. Remove marks a record it
// returned as removed; Close records the removals (nothing is recorded
// before Close). A DeadLetterReader is not safe for concurrent use, and two
// readers that remove records of one topic at the same time may each lose
// the other's removals (those records are then listed again).
type DeadLetterReader struct {
	adm   *kadm.Client
	cl    *kgo.Client // nil when there is nothing to read
	topic string
	parts map[int32]*deadLetterPartition
	buf   []*consumer.Message
	total int
	dirty bool
}

type deadLetterPartition struct {
	removals
	end     int64 // the end offset when the reader opened
	reached bool
}

// ReadDeadLetters opens a reader of the dead-letter topic of topic and
// group. A topic that has no dead-letter topic yet has nothing to read; a
// topic that does not exist is ErrNoTopic.
func (c *Client) ReadDeadLetters(ctx context.Context, topic, group string) (*DeadLetterReader, error) {
	dlq := DeadLetterTopic(topic, group)
	r := &DeadLetterReader{adm: c.adm, topic: dlq, parts: map[int32]*deadLetterPartition{}}
	topics, err := c.adm.ListTopics(ctx, topic, dlq)
	if err != nil {
		return nil, fmt.Errorf("kafka: describing %s: %w", dlq, err)
	}
	if !topics.Has(topic) {
		return nil, fmt.Errorf("kafka: %w: %s", ErrNoTopic, topic)
	}
	if !topics.Has(dlq) {
		return r, nil
	}
	starts, err := c.adm.ListStartOffsets(ctx, dlq)
	if err != nil {
		return nil, fmt.Errorf("kafka: start offsets of %s: %w", dlq, err)
	}
	ends, err := c.adm.ListEndOffsets(ctx, dlq)
	if err != nil {
		return nil, fmt.Errorf("kafka: end offsets of %s: %w", dlq, err)
	}
	rms, err := fetchRemovals(ctx, c.adm, dlq)
	if err != nil {
		return nil, err
	}
	from := map[int32]kgo.Offset{}
	var lerr error
	ends.Each(func(e kadm.ListedOffset) {
		if e.Err != nil {
			lerr = errors.Join(lerr, fmt.Errorf("kafka: end offset of %s[%d]: %w", dlq, e.Partition, e.Err))
			return
		}
		rm, ok := rms[e.Partition]
		if !ok {
			rm = removals{past: map[int64]bool{}}
		}
		start := int64(0)
		if st, ok := starts.Lookup(dlq, e.Partition); ok && st.Err == nil {
			start = st.Offset
		}
		p := &deadLetterPartition{removals: rm, end: e.Offset}
		r.parts[e.Partition] = p
		if n := rm.left(start, e.Offset); n > 0 {
			r.total += int(n)
			from[e.Partition] = kgo.NewOffset().At(max(start, rm.at))
		} else {
			p.reached = true
		}
	})
	if lerr != nil {
		return nil, lerr
	}
	if len(from) > 0 {
		r.cl, err = kgo.NewClient(append(c.cl.Opts(), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{dlq: from}))...)
		if err != nil {
			return nil, fmt.Errorf("kafka: %w", err)
		}
	}
	return r, nil
}

// Total is the number of records left to read when the reader opened.
func (r *DeadLetterReader) Total() int { return r.total }

// Next returns up to n records not returned before, partition by partition
// in offset order within each; none once every record present at opening
// was returned. Message.Source is the dead-letter topic and the failure
// context is in the oncely- headers; Partition and Offset identify the
// record for Remove.
func (r *DeadLetterReader) Next(ctx context.Context, n int) ([]*consumer.Message, error) {
	for r.cl != nil && len(r.buf) < n && !r.done() {
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		fs := r.cl.PollRecords(pctx, n)
		cancel()
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) {
				ferr = errors.Join(ferr, fmt.Errorf("kafka: reading %s[%d]: %w", t, p, err))
			}
		})
		if ferr != nil {
			return nil, ferr
		}
		if fs.Empty() {
			return nil, fmt.Errorf("kafka: reading %s: no records within 10s although its end offsets say more are there", r.topic)
		}
		fs.EachRecord(func(rec *kgo.Record) {
			p := r.parts[rec.Partition]
			if p == nil || p.reached {
				return
			}
			if rec.Offset+1 >= p.end {
				p.reached = true
			}
			if rec.Offset < p.end && !p.removed(rec.Offset) {
				r.buf = append(r.buf, deadLetterMessage(rec))
			}
		})
	}
	take := r.buf[:min(n, len(r.buf))]
	r.buf = r.buf[len(take):]
	return take, nil
}

func (r *DeadLetterReader) done() bool {
	for _, p := range r.parts {
		if !p.reached {
			return false
		}
	}
	return true
}

// Remove marks m, a record Next returned, as removed.
func (r *DeadLetterReader) Remove(m *consumer.Message) {
	if p := r.parts[m.Partition]; p != nil && m.Source == r.topic {
		p.add(m.Offset)
		r.dirty = true
	}
}

// Close records the removals and releases the reader's connections.
func (r *DeadLetterReader) Close(ctx context.Context) error {
	if r.cl != nil {
		r.cl.Close()
	}
	if !r.dirty {
		return nil
	}
	var offs kadm.Offsets
	for part, p := range r.parts {
		offs.Add(kadm.Offset{Topic: r.topic, Partition: part, At: p.at, LeaderEpoch: -1, Metadata: p.metadata()})
	}
	resp, err := r.adm.CommitOffsets(ctx, RedriveGroup(r.topic), offs)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		return fmt.Errorf("kafka: recording the removed records of %s: %w", r.topic, err)
	}
	return nil
}

// deadLetterMessage is the Message of a dead-letter record: its ID from the
// message-id (or ce_id) header.
func deadLetterMessage(rec *kgo.Record) *consumer.Message {
	src := &Source{cfg: Config{IDHeaders: []string{consumer.HeaderMessageID, HeaderCloudEventsID}}}
	return src.message(rec, nil)
}
