package redis

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/oncely/oncely/adapters/internal/startpos"
)

// Defaults applied to zero fields of Config.
const (
	LeaseDefault     = 30 * time.Second
	BlockDefault     = 500 * time.Millisecond
	ReapIdleDefault  = time.Hour
	IDFieldDefault   = "message-id"
	KeyFieldDefault  = "message-key"
	BodyFieldDefault = "body"

	// releasedIdle is the idle time Close gives the entries it releases:
	// far over any Lease, so the next reclaim of any Source takes them at
	// once.
	releasedIdle = 24 * time.Hour
	// maxLease keeps Lease below releasedIdle.
	maxLease = 12 * time.Hour
	// moveBatch is the most due retries one Receive moves to the retry
	// stream.
	moveBatch = 256
	// retryLook is the longest a Receive goes without moving due retries
	// and reading the retry stream (sooner when the next retry it knows
	// of is due): retries another Source of the group wrote, and
	// redriven dead letters, wait at most this long.
	retryLook = 100 * time.Millisecond
	// ackTimeout bounds one ack round trip.
	ackTimeout = 10 * time.Second
)

// Config configures a Source. The zero value of every field but Client,
// Stream and Consumer is valid and means the documented default.
type Config struct {
	// Client is the Redis connection: a *goredis.Client (one server, or
	// the primary Sentinels name: goredis.NewFailoverClient) or a
	// *goredis.ClusterClient (Redis Cluster: set its
	// ClusterStateReloadInterval to about a second, else after a
	// primary dies go-redis sends that primary's slots to the dead
	// address until its next reload, 60 s by default). Required; Close
	// does not close it.
	Client goredis.UniversalClient

	// Stream is the source stream. Required. On Redis Cluster (a
	// *goredis.ClusterClient or *goredis.Ring) it must carry a hash tag,
	// such as "{orders}" or "app:{orders}" (see HashTag): the settlement
	// scripts touch the stream and its retry and dead-letter keys
	// together, which Redis Cluster allows only within one slot, and
	// every derived key begins with the stream's name, so it shares the
	// stream's tag. A tagged name means the same keys on one server, so a
	// deployment can move to a cluster without renaming; New refuses an
	// untagged Stream on a cluster.
	Stream string

	// Consumer is the consumer name: the consumer group on Stream (created
	// at ID 0, so a new name reads the whole stream) and the prefix of its
	// retry and dead-letter keys. Required.
	Consumer string

	// Lease is how long an entry may stay pending with a consumer without
	// a sign of life before another Source of the group reclaims it
	// (XAUTOCLAIM min-idle-time); each reclaim counts as an attempt. A
	// Source renews the lease of its unsettled deliveries every Lease/3,
	// so a crashed process's entries move on after about Lease; when
	// renewals fail for two thirds of it, or an entry was reclaimed
	// anyway, the handlers of the deliveries received with it are
	// cancelled and they are not settled (consumer.Leased). Default
	// LeaseDefault (30s); at most 12h.
	Lease time.Duration

	// ReclaimInterval is how often a Source looks for entries whose lease
	// ended (and the first Receive always does). Default Lease/4.
	ReclaimInterval time.Duration

	// Block bounds one blocking XREADGROUP: Receive notices ctx and Close
	// within it, and redriven entries arrive within it. Default
	// BlockDefault (500ms).
	Block time.Duration

	// ReapIdle is how long a consumer of the group must have been idle,
	// with nothing pending, before a Source deletes it (XGROUP
	// DELCONSUMER). Consumers holding pending entries are never deleted.
	// Default ReapIdleDefault (1h).
	ReapIdle time.Duration

	// TrimInterval, when set, makes the Source trim Stream that often
	// (XTRIM MINID) below the oldest entry any consumer group of the
	// stream still needs: the oldest pending entry, or the first entry
	// after the group's last delivered one. An entry some group has not
	// processed is never trimmed. Zero (the default) never trims; trim
	// with XADD MAXLEN at your own risk instead.
	TrimInterval time.Duration

	// IDField, KeyField and BodyField name the entry fields carrying the
	// message ID, ordering key and body. Every other field is a header.
	// Defaults IDFieldDefault, KeyFieldDefault and BodyFieldDefault.
	IDField, KeyField, BodyField string

	// Start is where the consumer group starts on the source stream when
	// New creates it: "earliest" (the oldest entry the stream keeps),
	// "latest" (entries added after its creation, XGROUP CREATE … $) or an
	// RFC 3339 time (the first entry whose ID, the time Redis added it, is
	// at or after it; the oldest kept when the time is before the stream's
	// first entry). A group that exists keeps its position (use oncely
	// replay to move it); the retry stream's group, and a group recreated
	// after it vanished, start at the oldest entry. Default "earliest".
	Start string

	// Logger receives the Source's logs. Default slog.Default().
	Logger *slog.Logger

	// heartbeatTTL is how long the Source's heartbeat lasts without a
	// renewal. HeartbeatTTL; shorter in tests.
	heartbeatTTL time.Duration
}

func (c Config) withDefaults() Config {
	if c.Lease == 0 {
		c.Lease = LeaseDefault
	}
	if c.ReclaimInterval == 0 {
		c.ReclaimInterval = c.Lease / 4
	}
	if c.Block == 0 {
		c.Block = BlockDefault
	}
	if c.ReapIdle == 0 {
		c.ReapIdle = ReapIdleDefault
	}
	if c.IDField == "" {
		c.IDField = IDFieldDefault
	}
	if c.KeyField == "" {
		c.KeyField = KeyFieldDefault
	}
	if c.BodyField == "" {
		c.BodyField = BodyFieldDefault
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.heartbeatTTL == 0 {
		c.heartbeatTTL = HeartbeatTTL
	}
	return c
}

// validate reports every problem of a Config with defaults applied.
func (c Config) validate() error {
	var errs []error
	if _, err := startpos.Parse(c.Start); err != nil {
		errs = append(errs, err)
	}
	if c.Client == nil {
		errs = append(errs, errors.New("a Client is required"))
	}
	if c.Stream == "" {
		errs = append(errs, errors.New("a Stream is required"))
	} else if _, tagged := HashTag(c.Stream); !tagged && c.Client != nil && sharded(c.Client) {
		errs = append(errs, fmt.Errorf("field Stream %q needs a hash tag on Redis Cluster, such as %q: its retry and dead-letter keys must share its slot", c.Stream, "{"+c.Stream+"}"))
	}
	if c.Consumer == "" {
		errs = append(errs, errors.New("a Consumer name is required (it names the consumer group and the retry and dead-letter keys)"))
	}
	if c.Lease < time.Second || c.Lease > maxLease {
		errs = append(errs, fmt.Errorf("field Lease must be 1s to %s, got %s", maxLease, c.Lease))
	}
	if c.ReclaimInterval < 0 || c.ReclaimInterval > c.Lease {
		errs = append(errs, fmt.Errorf("field ReclaimInterval must be > 0 and at most Lease (%s), got %s", c.Lease, c.ReclaimInterval))
	}
	if c.Block < time.Millisecond {
		errs = append(errs, fmt.Errorf("field Block must be at least 1ms, got %s", c.Block))
	}
	if c.ReapIdle < c.Lease {
		errs = append(errs, fmt.Errorf("field ReapIdle must be at least Lease (%s), got %s", c.Lease, c.ReapIdle))
	}
	if c.TrimInterval < 0 {
		errs = append(errs, fmt.Errorf("field TrimInterval must be >= 0 (0: never trim), got %s", c.TrimInterval))
	}
	names := map[string]string{"IDField": c.IDField, "KeyField": c.KeyField, "BodyField": c.BodyField}
	seen := map[string]string{}
	for _, f := range []string{"IDField", "KeyField", "BodyField"} {
		if other, ok := seen[names[f]]; ok {
			errs = append(errs, fmt.Errorf("%s and %s are both %q", other, f, names[f]))
		}
		seen[names[f]] = f
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("redis: invalid Config: %w", err)
	}
	return nil
}
