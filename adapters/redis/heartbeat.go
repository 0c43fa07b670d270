package redis

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// HeartbeatTTL is how long a Source's heartbeat (see LiveKey) lasts
// without a renewal: a running Source renews it every HeartbeatTTL/3, Close
// deletes it, and a crashed Source's expires by itself within HeartbeatTTL.
const HeartbeatTTL = 15 * time.Second

// LiveKey is the sorted set of the running Sources of (stream, consumer):
// member a Source's consumer name in the group, score the time its
// heartbeat expires (Unix milliseconds, Redis's clock). The key expires
// HeartbeatTTL after the last renewal of any of them.
// "<stream>.<consumer>.live" for a consumer name without '.'; any other is
// escaped (see pairPrefix). It shares the stream's hash tag, so its slot.
func LiveKey(stream, consumer string) string { return pairPrefix(stream, consumer) + "live" }

// beatScript renews the heartbeat of Source ARGV[1] in the live set
// KEYS[1] for ARGV[2] milliseconds, dropping the expired heartbeats of
// crashed Sources, and renews the key's own expiry.
var beatScript = goredis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('ZADD', KEYS[1], now + ttl, ARGV[1])
redis.call('PEXPIRE', KEYS[1], ttl)
return now
`)

// liveScript returns {Redis's time, the live set KEYS[1]'s unexpired
// members and their expiry times (ZRANGEBYSCORE … WITHSCORES)}, times in
// Unix milliseconds.
var liveScript = goredis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
return {now, redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. now, '+inf', 'WITHSCORES')}
`)

// heartbeat keeps a Source's member of its live set from New to Close, so
// that oncely replay sees the Source running whether or not it was
// delivered anything lately (XINFO CONSUMERS shows neither before Redis
// 7.2). One script call every ttl/3; failures are logged on the first one
// after a success and retried at the next beat.
type heartbeat struct {
	s      *Source
	key    string
	ttl    time.Duration
	stopc  chan struct{}
	exited chan struct{}
	once   sync.Once
}

// startHeartbeat writes the Source's heartbeat once, so the Source is seen
// running before New returns, then renews it in the background.
func startHeartbeat(ctx context.Context, s *Source) (*heartbeat, error) {
	h := &heartbeat{s: s, key: LiveKey(s.cfg.Stream, s.cfg.Consumer), ttl: s.cfg.heartbeatTTL, stopc: make(chan struct{}), exited: make(chan struct{})}
	if err := h.beat(ctx); err != nil {
		return nil, fmt.Errorf("redis: writing the heartbeat of %s: %w", s.cfg.Stream, err)
	}
	go h.loop()
	return h, nil
}

func (h *heartbeat) beat(ctx context.Context) error {
	return beatScript.Run(ctx, h.s.client, []string{h.key}, h.s.name, h.ttl.Milliseconds()).Err()
}

func (h *heartbeat) loop() {
	defer close(h.exited)
	tick := time.NewTicker(h.ttl / 3)
	defer tick.Stop()
	failing := false
	for {
		select {
		case <-h.stopc:
			return
		case <-tick.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), h.ttl/3)
		err := h.beat(ctx)
		cancel()
		if err != nil && !failing {
			h.s.log.Warn("redis: renewing the Source's heartbeat failed; oncely replay may not see it running until a renewal succeeds", "error", err, "ttl", h.ttl.String())
		}
		failing = err != nil
	}
}

// halt ends the renewals: the heartbeat expires by itself.
func (h *heartbeat) halt() {
	h.once.Do(func() { close(h.stopc) })
	<-h.exited
}

// stop ends the renewals and deletes the Source's heartbeat.
func (h *heartbeat) stop(ctx context.Context) error {
	h.halt()
	if err := h.s.client.ZRem(ctx, h.key, h.s.name).Err(); err != nil {
		return fmt.Errorf("deleting the heartbeat: %w", err)
	}
	return nil
}

// runningSource is a Source whose heartbeat has not expired.
type runningSource struct {
	name string
	// expires is how long its heartbeat lasts unless renewed.
	expires time.Duration
}

// runningSources lists the Sources of group whose heartbeat on stream has
// not expired.
func runningSources(ctx context.Context, client goredis.UniversalClient, stream, group string) ([]runningSource, error) {
	res, err := liveScript.Run(ctx, client, []string{LiveKey(stream, group)}).Slice()
	if err != nil {
		return nil, fmt.Errorf("redis: heartbeats of group %s: %w", group, err)
	}
	if len(res) != 2 {
		return nil, fmt.Errorf("redis: unexpected heartbeat script reply %v", res)
	}
	now, _ := res[0].(int64)
	pairs, _ := res[1].([]any)
	out := make([]runningSource, 0, len(pairs)/2)
	for i := 0; i+1 < len(pairs); i += 2 {
		name, _ := pairs[i].(string)
		score, _ := pairs[i+1].(string)
		expires, err := strconv.ParseFloat(score, 64)
		if err != nil {
			return nil, fmt.Errorf("redis: heartbeat of %s: expiry %q: %w", name, score, err)
		}
		out = append(out, runningSource{name: name, expires: time.Duration(int64(expires)-now) * time.Millisecond})
	}
	return out, nil
}
