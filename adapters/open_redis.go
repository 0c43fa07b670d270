package adapters

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/oncely/oncely/adapters/redis"
	"github.com/oncely/oncely/consumer"
)

// openRedis opens redis://[user:pass@]host:port/db (rediss:// for TLS) with
// adapters/redis. The source is a stream; for consumer name C the adapter
// keeps <source>.C.delayed (retries not yet due), <source>.C.retry (due
// retries and redriven dead letters) and <source>.C.dlq (dead letters; a C
// with '.' is escaped: redis.DeadLetterStream), and C is a consumer group
// on <source>. Query parameters:
//
//	start=earliest|latest|TIME
//	                       where the consumer group starts on the source stream when it does
//	                       not exist yet (redis.Config.Start; default earliest; TIME is RFC 3339)
//	lease=30s              how long an entry stays pending with a consumer without renewal
//	                       before another reclaims it, counting an attempt (renewed every lease/3)
//	reclaim_interval=D     how often a Source looks for entries whose lease ended (default lease/4)
//	block=500ms            longest blocking XREADGROUP (Close and ctx are noticed within it)
//	reap_idle=1h           idle time after which a consumer holding nothing pending is deleted
//	trim_interval=D        trim the source stream this often below the oldest entry any group
//	                       still needs (default: never trim)
//	tls_ca, tls_cert, tls_key, tls_server_name, tls_insecure_skip_verify
//	                       TLS for rediss:// (see queryTLS)
//
// redis+sentinel://[user:pass@]host:port[,host:port]/MASTER names the
// Sentinels watching the primary MASTER instead of one server: the client
// asks them for the current primary and, after a failover, reconnects to the
// one they promoted. The user info authenticates to the primary (the
// Sentinels are reached without credentials); db=N picks the database
// (default 0); the parameters above apply too. Redis replicates
// asynchronously: see docs/brokers.md, "Running on a cluster", for what a
// failover can lose and the settings that bound it.
//
// redis+cluster://[user:pass@]host:port[,host:port]/ names seed nodes of a
// Redis Cluster (rediss+cluster:// for TLS, with the tls_* parameters): the
// client learns the slot map from them and follows the cluster's
// failovers and slot moves (MOVED, ASK), asking for the slot map every
// second so a promoted replica is found within a second of a failover. Each source stream must carry a
// hash tag ("{orders}") so its retry and dead-letter keys share its slot
// (redis.Config.Stream); Source refuses one without.
//
// Open pings the server (bounded by 10 s) and fails with "no Redis answers". Dead letters are browsed with
// XRANGE, which changes nothing; Redrive appends to <source>.C.retry, which
// only consumer name C reads, and Backlog reads XINFO GROUPS (lag plus
// pending), without joining the group.
func openRedis(ctx context.Context, u *url.URL, o options) (Broker, error) {
	q := newQuery(u)
	cfg := redis.Config{Logger: o.logger}
	duration := func(name string, dst *time.Duration) {
		if v := q.str(name); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				q.fail("%s=%q: want a positive duration such as 30s", name, v)
			}
			*dst = d
		}
	}
	duration("lease", &cfg.Lease)
	duration("reclaim_interval", &cfg.ReclaimInterval)
	duration("block", &cfg.Block)
	duration("reap_idle", &cfg.ReapIdle)
	duration("trim_interval", &cfg.TrimInterval)
	cfg.Start = startParam(q)
	tlsCfg := queryTLS(q)
	if tlsCfg != nil && u.Scheme != "rediss" && u.Scheme != redissClusterScheme {
		q.fail("tls_* parameters configure TLS, which needs rediss:// or rediss+cluster://")
	}
	if tlsCfg == nil && u.Scheme == redissClusterScheme {
		tlsCfg = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	if u.Host == "" {
		q.fail("no host; write redis://host:port/db")
	}
	var (
		sentinel *goredis.FailoverOptions
		cluster  *goredis.ClusterOptions
	)
	switch strings.ToLower(u.Scheme) {
	case redisSentinelScheme:
		sentinel = sentinelOptions(u, q)
	case redisClusterScheme, redissClusterScheme:
		cluster = clusterOptions(u, q)
	}
	if err := q.err(); err != nil {
		return nil, err
	}
	var client goredis.UniversalClient
	switch {
	case sentinel != nil:
		client = goredis.NewFailoverClient(sentinel)
	case cluster != nil:
		cluster.TLSConfig = tlsCfg
		client = goredis.NewClusterClient(cluster)
	default:
		plain := *u
		plain.RawQuery = ""
		opts, err := goredis.ParseURL(plain.String())
		if err != nil {
			return nil, err
		}
		if tlsCfg != nil {
			if tlsCfg.ServerName == "" {
				tlsCfg.ServerName = u.Hostname()
			}
			opts.TLSConfig = tlsCfg
		}
		client = goredis.NewClient(opts)
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := client.Ping(pctx).Err(); err != nil {
		_ = client.Close()
		return nil, fmt.Errorf("no Redis answers at %s: %w", u.Host, err)
	}
	cfg.Client = client
	return &redisBroker{cfg: cfg, client: client}, nil
}

// The schemes of URLs naming Sentinels and Redis Cluster seed nodes.
const (
	redisSentinelScheme = "redis+sentinel"
	redisClusterScheme  = "redis+cluster"
	redissClusterScheme = "rediss+cluster"
)

// clusterReloadInterval is how often a cluster client asks for the slot
// map (CLUSTER SLOTS, one small command). go-redis reloads it at once on a
// MOVED reply, but a dead primary sends none: until the next reload every
// command of its slots goes to the dead address. go-redis's default, 60 s,
// would stall intake that long after a failover; at 1 s the client finds
// the promoted replica within a second of the promotion.
const clusterReloadInterval = time.Second

// clusterOptions reads redis+cluster://[user:pass@]host:port[,host:port]/
// into the options of a Redis Cluster client; problems are recorded in q.
// A cluster has one database, so the path must be empty.
func clusterOptions(u *url.URL, q *query) *goredis.ClusterOptions {
	o := &goredis.ClusterOptions{Addrs: strings.Split(u.Host, ","), ClusterStateReloadInterval: clusterReloadInterval}
	if p := strings.Trim(u.Path, "/"); p != "" {
		q.fail("path %q: Redis Cluster has one database; write redis+cluster://host:port[,host:port]/", p)
	}
	for _, a := range o.Addrs {
		if _, port, err := net.SplitHostPort(a); err != nil || port == "" {
			q.fail("cluster node address %q: want host:port", a)
		}
	}
	if u.User != nil {
		o.Username = u.User.Username()
		o.Password, _ = u.User.Password()
	}
	return o
}

// sentinelOptions reads redis+sentinel://[user:pass@]host:port[,host:port]/MASTER?db=N
// into the options of a client that follows MASTER's failovers; problems
// are recorded in q.
func sentinelOptions(u *url.URL, q *query) *goredis.FailoverOptions {
	o := &goredis.FailoverOptions{MasterName: strings.Trim(u.Path, "/"), SentinelAddrs: strings.Split(u.Host, ",")}
	if o.MasterName == "" || strings.Contains(o.MasterName, "/") {
		q.fail("no primary name; write redis+sentinel://host:port[,host:port]/MASTER")
	}
	for _, a := range o.SentinelAddrs {
		if _, port, err := net.SplitHostPort(a); err != nil || port == "" {
			q.fail("sentinel address %q: want host:port", a)
		}
	}
	if v := q.str("db"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			q.fail("db=%q: want a database number such as 0", v)
		}
		o.DB = n
	}
	if u.User != nil {
		o.Username = u.User.Username()
		o.Password, _ = u.User.Password()
	}
	return o
}

// redisBroker is a Broker on one Redis server, on the primary that
// Sentinels name, or on a Redis Cluster.
type redisBroker struct {
	cfg    redis.Config
	client goredis.UniversalClient
}

func (r *redisBroker) Kind() string { return "redis" }

func (r *redisBroker) Source(ctx context.Context, source, consumerName string) (consumer.Source, error) {
	if err := checkNames(source, consumerName); err != nil {
		return nil, err
	}
	cfg := r.cfg
	cfg.Stream, cfg.Consumer = source, consumerName
	return redis.New(ctx, cfg)
}

// Publish appends msgs to the source stream in one pipeline (XADD each,
// in order) and returns once Redis answered every one.
func (r *redisBroker) Publish(ctx context.Context, source string, msgs ...*consumer.Message) error {
	return r.append(ctx, source, msgs...)
}

func (r *redisBroker) append(ctx context.Context, stream string, msgs ...*consumer.Message) error {
	p := r.client.Pipeline()
	for _, m := range msgs {
		p.XAdd(ctx, &goredis.XAddArgs{Stream: stream, Values: redis.EntryFields(m)})
	}
	if _, err := p.Exec(ctx); err != nil {
		return fmt.Errorf("redis: appending %d messages to %s: %w", len(msgs), stream, err)
	}
	return nil
}

func (r *redisBroker) DeadLetters(ctx context.Context, source, consumerName string, limit int) ([]DeadLetter, error) {
	s, err := r.session(ctx, source, consumerName)
	if err != nil {
		return nil, err
	}
	return listDeadLetters(ctx, s, limit)
}

// Redrive appends each selected dead letter to <source>.<consumer>.retry,
// which only consumerName's group reads (appending to the source stream
// would hand it to every consumer name again), then deletes it from the
// dead-letter stream.
func (r *redisBroker) Redrive(ctx context.Context, source, consumerName string, opts RedriveOptions) (RedriveResult, error) {
	s, err := r.session(ctx, source, consumerName)
	if err != nil {
		return RedriveResult{}, err
	}
	retry := redis.RetryStream(source, consumerName)
	return redrive(ctx, s, func(ctx context.Context, msgs ...*consumer.Message) error { return r.append(ctx, retry, msgs...) }, opts)
}

// Purge deletes the selected dead letters of (source, consumerName); see
// Broker.Purge.
func (r *redisBroker) Purge(ctx context.Context, source, consumerName string, opts PurgeOptions) (PurgeResult, error) {
	s, err := r.session(ctx, source, consumerName)
	if err != nil {
		return PurgeResult{}, err
	}
	return purge(ctx, s, opts)
}

func (r *redisBroker) Backlog(ctx context.Context, source, consumerName string) ([]consumer.Backlog, error) {
	if err := checkNames(source, consumerName); err != nil {
		return nil, err
	}
	if err := r.sourceExists(ctx, source); err != nil {
		return nil, err
	}
	if err := checkConsumer(ctx, r, source, consumerName); err != nil {
		return nil, err
	}
	return redis.Backlog(ctx, r.client, source, consumerName)
}

// sourceExists is nil when the source stream exists, ErrNoSource when not.
func (r *redisBroker) sourceExists(ctx context.Context, source string) error {
	n, err := r.client.Exists(ctx, source).Result()
	if err != nil {
		return fmt.Errorf("redis: looking up %s: %w", source, err)
	}
	if n == 0 {
		return noSource("redis stream", source)
	}
	return nil
}

func (r *redisBroker) Close() error {
	if err := r.client.Close(); err != nil && !errors.Is(err, goredis.ErrClosed) {
		return err
	}
	return nil
}

// redisSession reads a dead-letter stream with XRANGE up to the last entry
// it held when the session opened (letters dead-lettered meanwhile are left
// for the next session); remove deletes one entry (XDEL).
type redisSession struct {
	r      *redisBroker
	stream string
	last   string // "" when the stream was empty
	cursor string
	count  int
}

func (r *redisBroker) session(ctx context.Context, source, consumerName string) (*redisSession, error) {
	if err := checkNames(source, consumerName); err != nil {
		return nil, err
	}
	if err := r.sourceExists(ctx, source); err != nil {
		return nil, err
	}
	if err := checkConsumer(ctx, r, source, consumerName); err != nil {
		return nil, err
	}
	s := &redisSession{r: r, stream: redis.DeadLetterStream(source, consumerName), cursor: "-"}
	last, err := r.client.XRevRangeN(ctx, s.stream, "+", "-", 1).Result()
	if err != nil {
		return nil, fmt.Errorf("redis: reading %s: %w", s.stream, err)
	}
	if len(last) > 0 {
		s.last = last[0].ID
		n, err := r.client.XLen(ctx, s.stream).Result()
		if err != nil {
			return nil, fmt.Errorf("redis: reading %s: %w", s.stream, err)
		}
		s.count = int(n)
	}
	return s, nil
}

func (s *redisSession) total() int { return s.count }

func (s *redisSession) next(ctx context.Context, n int) ([]heldLetter, error) {
	if s.last == "" || s.cursor == "("+s.last {
		return nil, nil
	}
	entries, err := s.r.client.XRangeN(ctx, s.stream, s.cursor, s.last, int64(n)).Result()
	if err != nil {
		return nil, fmt.Errorf("redis: reading %s: %w", s.stream, err)
	}
	out := make([]heldLetter, 0, len(entries))
	for _, e := range entries {
		id := e.ID
		out = append(out, heldLetter{msg: redis.DecodeEntry(s.stream, e), remove: func(ctx context.Context) error {
			return s.r.client.XDel(ctx, s.stream, id).Err()
		}})
	}
	if len(entries) == 0 {
		s.cursor = "(" + s.last
	} else {
		s.cursor = "(" + entries[len(entries)-1].ID
	}
	return out, nil
}

func (s *redisSession) close(context.Context) error { return nil }
