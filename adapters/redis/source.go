package redis

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/oncely/oncely/adapters/internal/startpos"
	"github.com/oncely/oncely/consumer"
)

// Source reads a Redis stream as one consumer of a consumer group: new
// entries with XREADGROUP, entries whose lease ended with XAUTOCLAIM, due
// retry copies from the consumer's retry stream. From New to Close it
// keeps a heartbeat in LiveKey (one script call every HeartbeatTTL/3, 5 s),
// by which oncely replay refuses to move the group while it runs, whether
// or not it was delivered anything lately; a crashed Source's heartbeat
// expires within HeartbeatTTL (15 s). See the package doc.
type Source struct {
	cfg     Config
	client  goredis.UniversalClient
	log     *slog.Logger
	codec   codec
	name    string // this Source's consumer in the group: unique per Source
	retry   string // RetryStream
	delayed string // DelayedKey
	dlq     string // DeadLetterStream
	acks    *acker
	leases  *renewer
	live    *heartbeat

	recv        sync.Mutex // serialises the reads of Receive
	hk          housekeeping
	now         func() time.Time // Receive's clock for the retry looks: time.Now
	cursors     map[string]*readCursor
	cursorEpoch int64
	groupEpoch  atomic.Int64 // counts the recreations of the group (recoverGroup)

	mu        sync.Mutex
	closed    bool
	closing   chan struct{}
	receivers sync.WaitGroup
	open      map[*delivery]struct{}

	reclaimed atomic.Int64
	ghosts    atomic.Int64
}

var (
	_ consumer.Source          = (*Source)(nil)
	_ consumer.ConsumerNamer   = (*Source)(nil)
	_ consumer.BacklogReporter = (*Source)(nil)
	_ consumer.Prober          = (*Source)(nil)
)

// New checks cfg, creates the consumer group on the source and retry
// streams when missing (at ID 0, creating the streams), and returns a
// Source. Its consumer name in the group is unique to it:
// <hostname>-<pid>-<random>. The Source's heartbeat is written before New
// returns.
func New(ctx context.Context, cfg Config) (*Source, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Source{
		cfg:     cfg,
		client:  cfg.Client,
		log:     cfg.Logger.With("stream", cfg.Stream, "consumer", cfg.Consumer),
		codec:   codec{id: cfg.IDField, key: cfg.KeyField, body: cfg.BodyField},
		name:    consumerName(),
		retry:   RetryStream(cfg.Stream, cfg.Consumer),
		delayed: DelayedKey(cfg.Stream, cfg.Consumer),
		dlq:     DeadLetterStream(cfg.Stream, cfg.Consumer),
		closing: make(chan struct{}),
		open:    make(map[*delivery]struct{}),
		now:     time.Now,
	}
	start, _ := startpos.Parse(cfg.Start) // checked by validate
	if err := s.ensureGroups(ctx, start); err != nil {
		return nil, err
	}
	live, err := startHeartbeat(ctx, s)
	if err != nil {
		return nil, err
	}
	s.live = live
	s.acks = newAcker(s)
	s.leases = newRenewer(s)
	return s, nil
}

// consumerName returns a consumer name unique to this Source.
func consumerName() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "oncely"
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

// ConsumerName returns Config.Consumer.
func (s *Source) ConsumerName() string { return s.cfg.Consumer }

// Capabilities: retries wait on Redis (the delayed set), attempts come
// from the delivery counter plus the attempt header of retry copies, the
// lease of unsettled deliveries is renewed, and every consumer name is its
// own group (fan-out).
func (s *Source) Capabilities() consumer.Capabilities {
	return consumer.Capabilities{Broker: "redis", NativeDelay: true, DeliveryCount: true, FanOut: true, LeaseRenewal: true}
}

// Probe pings Redis.
func (s *Source) Probe(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.client.Ping(ctx).Err()
}

// Receive returns up to max deliveries: first entries whose lease ended
// (when a reclaim is due), then due retries (looked for every 100ms, and
// when the next one known is due), then new entries. It blocks in
// XREADGROUP for at most Config.Block at a time, so ctx and Close are
// noticed within it.
func (s *Source) Receive(ctx context.Context, max int) ([]consumer.Delivery, error) {
	if max < 1 {
		return nil, fmt.Errorf("redis: Receive: max must be >= 1, got %d", max)
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, consumer.ErrSourceClosed
	}
	s.receivers.Add(1)
	s.mu.Unlock()
	defer s.receivers.Done()
	for {
		if s.isClosed() {
			return nil, consumer.ErrSourceClosed
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		ds, wait, err := s.fast(ctx, max)
		if err == nil && len(ds) == 0 {
			ds, err = s.block(ctx, max, wait)
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if s.recoverGroup(ctx, err) {
				continue
			}
			return nil, fmt.Errorf("redis: reading %s: %w", s.cfg.Stream, err)
		}
		s.track(ds)
		if s.isClosed() {
			// Close releases them once this Receive returned.
			return nil, consumer.ErrSourceClosed
		}
		if len(ds) > 0 {
			return ds, nil
		}
	}
}

// fast does the housekeeping that is due and, when a look at the retries
// is due, moves due retries and reads without blocking (receiveScript).
// wait is how long a blocking read of the source stream may then wait: up
// to the next look at the retries.
func (s *Source) fast(ctx context.Context, n int) (ds []consumer.Delivery, wait time.Duration, err error) {
	s.recv.Lock()
	defer s.recv.Unlock()
	if ds, err := s.hk.run(ctx, s, n); err != nil || len(ds) > 0 {
		return ds, 0, err
	}
	now := s.now()
	if now.Before(s.hk.nextRetryLook) {
		return nil, min(s.cfg.Block, s.hk.nextRetryLook.Sub(now)), nil
	}
	res, err := receiveScript.Run(ctx, s.client, []string{s.delayed, s.retry, s.cfg.Stream},
		s.cfg.Consumer, s.name, n, moveBatch, s.cursor(s.retry).start(), s.cursor(s.cfg.Stream).start()).Slice()
	if err != nil {
		return nil, 0, err
	}
	if len(res) != 6 {
		return nil, 0, fmt.Errorf("redis: unexpected receive script reply %v", res)
	}
	for i, stream := range []string{s.retry, s.cfg.Stream} {
		pending := parsePending(res[4+i])
		got, err := s.admit(ctx, stream, pending, len(pending) >= n, parseEntries(res[i]), n-len(ds))
		if err != nil {
			return nil, 0, err
		}
		ds = append(ds, got...)
	}
	look := retryLook
	if next, err := strconv.ParseInt(fmt.Sprint(res[2]), 10, 64); err == nil {
		redisNow, _ := res[3].(int64)
		look = min(look, max(time.Duration(next-redisNow)*time.Millisecond, time.Millisecond))
	}
	s.hk.nextRetryLook = now.Add(look)
	return ds, min(s.cfg.Block, look), nil
}

// block waits up to wait, rounded up to the millisecond, for new entries
// of the source stream, after the orphans pending with this consumer (see
// admit), in the same round trip. It never waits without a bound: XREADGROUP counts
// BLOCK in whole milliseconds and BLOCK 0 waits forever, deaf to ctx and
// Close.
func (s *Source) block(ctx context.Context, max int, wait time.Duration) ([]consumer.Delivery, error) {
	s.recv.Lock()
	defer s.recv.Unlock()
	pipe := s.client.Pipeline()
	pend := pipe.XPendingExt(ctx, &goredis.XPendingExtArgs{
		Stream: s.cfg.Stream, Group: s.cfg.Consumer, Start: s.cursor(s.cfg.Stream).start(), End: "+", Count: int64(max), Consumer: s.name,
	})
	read := pipe.XReadGroup(ctx, &goredis.XReadGroupArgs{
		Group: s.cfg.Consumer, Consumer: s.name, Streams: []string{s.cfg.Stream, ">"},
		Count: int64(max), Block: blockFor(s.pipelineWait(wait)),
	})
	_, _ = pipe.Exec(ctx) // each command's error is looked at below
	listed, err := pend.Result()
	if err != nil {
		return nil, err
	}
	res, err := read.Result()
	if err != nil && !errors.Is(err, goredis.Nil) {
		return nil, err
	}
	pending := make([]pendingEntry, len(listed))
	for i, p := range listed {
		pending[i] = pendingEntry{id: p.ID, count: p.RetryCount}
	}
	var fresh []goredis.XMessage
	for _, st := range res {
		fresh = append(fresh, st.Messages...)
	}
	return s.admit(ctx, s.cfg.Stream, pending, len(pending) >= max, fresh, max)
}

// blockFor is the BLOCK of a read waiting up to wait: wait rounded up to
// the millisecond, at least 1ms (BLOCK 0 would wait forever).
func blockFor(wait time.Duration) time.Duration {
	return max((wait+time.Millisecond-1)/time.Millisecond, 1) * time.Millisecond
}

// track registers deliveries as unsettled: Close releases those still
// unsettled.
func (s *Source) track(ds []consumer.Delivery) {
	if len(ds) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range ds {
		s.open[d.(*delivery)] = struct{}{}
	}
}

func (s *Source) isClosed() bool {
	select {
	case <-s.closing:
		return true
	default:
		return false
	}
}

// Close stops intake, waits for Receive calls to return, writes every
// queued ack, hands every unsettled delivery back (its lease ended at once,
// its delivery counter unchanged: the next reclaim of any Source of the
// group takes it without counting an attempt) and deletes this Source's
// consumer from the group when it holds nothing pending, and deletes its
// heartbeat last. It does not close Config.Client.
func (s *Source) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.closing)
	s.mu.Unlock()
	s.receivers.Wait()
	s.leases.stop()
	ackErr := s.acks.stop(ctx)

	s.mu.Lock()
	open := make([]*delivery, 0, len(s.open))
	for d := range s.open {
		open = append(open, d)
	}
	s.mu.Unlock()
	err := errors.Join(ackErr, s.release(ctx, open))
	if err == nil {
		err = s.deleteConsumer(ctx, s.name)
	}
	err = errors.Join(err, s.live.stop(ctx))
	if err != nil {
		return fmt.Errorf("redis: closing the Source of %s: %w", s.cfg.Stream, err)
	}
	return nil
}

// release ends the lease of ds at once, keeping their delivery counters:
// XCLAIM to this consumer with an idle time far over any lease and the
// counter one lower (the next reclaim raises it again); entries another
// Source reclaimed meanwhile are left to it (releaseScript).
func (s *Source) release(ctx context.Context, ds []*delivery) error {
	type group struct {
		stream string
		count  int64
	}
	ids := map[group][]any{}
	for _, d := range ds {
		if d.markReleased() {
			g := group{d.stream, d.count}
			ids[g] = append(ids[g], d.entryID)
		}
	}
	var errs []error
	for g, list := range ids {
		args := append([]any{s.cfg.Consumer, s.name, releasedIdle.Milliseconds(), g.count - 1}, list...)
		// A group that is gone holds nothing pending: nothing to release.
		if err := releaseScript.Run(ctx, s.client, []string{g.stream}, args...).Err(); err != nil && !isNoGroup(err) {
			errs = append(errs, fmt.Errorf("releasing %d entries of %s: %w", len(list), g.stream, err))
		}
	}
	return errors.Join(errs...)
}

// deleteConsumer deletes consumer name from the group on both streams,
// only when it holds nothing pending on either (a group that is gone holds
// no consumer).
func (s *Source) deleteConsumer(ctx context.Context, name string) error {
	err := delConsumerScript.Run(ctx, s.client, []string{s.cfg.Stream, s.retry}, s.cfg.Consumer, name).Err()
	if isNoGroup(err) {
		return nil
	}
	return err
}

// parseEntries reads a script's list of stream entries.
func parseEntries(v any) []goredis.XMessage {
	list, _ := v.([]any)
	out := make([]goredis.XMessage, 0, len(list))
	for _, item := range list {
		e, ok := item.([]any)
		if !ok || len(e) < 1 {
			continue
		}
		id, _ := e[0].(string)
		m := goredis.XMessage{ID: id}
		if len(e) > 1 {
			if fields, ok := e[1].([]any); ok {
				m.Values = make(map[string]any, len(fields)/2)
				for i := 0; i+1 < len(fields); i += 2 {
					k, _ := fields[i].(string)
					m.Values[k] = fields[i+1]
				}
			}
		}
		out = append(out, m)
	}
	return out
}
