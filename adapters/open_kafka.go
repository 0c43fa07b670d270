package adapters

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/oncely/oncely/adapters/kafka"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/retry"
)

// openKafka opens kafka://[USER:PASSWORD@]host:port[,host:port] (kafkas://
// for TLS) with adapters/kafka. The consumer name is the consumer group.
// Query parameters:
//
//	start=earliest|latest|TIME
//	                      where a new consumer group starts (kafka.Config.Start;
//	                      default earliest; TIME is RFC 3339); an existing group
//	                      keeps its committed offsets
//	instance_id=ID        static membership (kafka.Config.InstanceID): a restarted
//	                      consumer takes its partitions back at once; unique per live member
//	partitions=N          partition count of topics created (default: the source's, else the broker's)
//	replication_factor=N  replication factor of the topics oncely creates: source (by
//	                      Publish or a Source), retry and dead-letter (default: the
//	                      broker's; replication=N is the same); existing topics keep theirs
//	min_insync_replicas=N min.insync.replicas of the topics oncely creates (default: the
//	                      broker's); at most replication_factor
//	tiers=1s,10s,1m       retry topic delays (default 1s,10s,1m,10m,1h); only those
//	                      the consumer's retry policy reaches are created
//	retry=topics|in-place retry mode (default topics)
//	group_protocol=classic|consumer
//	                      consumer group protocol (default classic); consumer is
//	                      Kafka 4's KIP-848 protocol, the broker assigning partitions
//	                      (kgo.ServerSideBalancer; Kafka 4.3+ advised)
//	session_timeout=45s   classic protocol only: how long the group waits for a
//	                      crashed member before moving its partitions (default
//	                      franz-go's 45s; the broker refuses values outside its
//	                      group.min/max.session.timeout.ms). The heartbeat interval
//	                      is a third of it, at most franz-go's default 3s. Refused
//	                      with group_protocol=consumer, where the session timeout
//	                      is the broker's group.consumer.session.timeout.ms
//	tls=true              TLS, as kafkas:// (default false for kafka://)
//	tls_ca=FILE           PEM CA certificates to verify brokers with (default: the system's)
//	tls_cert=FILE         PEM client certificate (mutual TLS), with tls_key
//	tls_key=FILE          PEM key of tls_cert
//	tls_server_name=NAME  name brokers' certificates must carry (default: each broker's host)
//	tls_insecure_skip_verify=true  no certificate check: for tests only
//	sasl=MECHANISM        with USER:PASSWORD: scram-sha-512 (default), scram-sha-256 or plain
//
// The TLS and SASL settings apply to every connection of the broker: its
// Sources, Publish, and the dead-letter, redrive and backlog tools.
// Publish creates the topic when absent. Dead letters are read from
// kafka.DeadLetterTopic ("<source>.<consumer>.dlq"; other groups than
// letters, digits and '-' escaped) by kafka.DeadLetterReader; a record
// Redrive moved back is recorded as removed in the group
// "<dead-letter topic>.redrive"
// (kafka.RedriveGroup) and not listed, counted or redriven again, whatever a
// filter skipped before it.
func openKafka(ctx context.Context, u *url.URL, o options) (Broker, error) {
	q := newQuery(u)
	var cfg kafka.Config
	cfg.InstanceID = q.str("instance_id")
	cfg.Start = startParam(q)
	if v := q.str("partitions"); v != "" {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil || n < 1 {
			q.fail("partitions=%q: want a positive integer", v)
		}
		cfg.TopicPartitions = int32(n)
	}
	for _, name := range []string{"replication_factor", "replication"} {
		if v := q.str(name); v != "" {
			n, err := strconv.ParseInt(v, 10, 16)
			if err != nil || n < 1 {
				q.fail("%s=%q: want a positive integer", name, v)
			}
			cfg.ReplicationFactor = int16(n)
		}
	}
	if v := q.str("min_insync_replicas"); v != "" {
		n, err := strconv.ParseInt(v, 10, 16)
		if err != nil || n < 1 {
			q.fail("min_insync_replicas=%q: want a positive integer", v)
		}
		cfg.MinInsyncReplicas = int(n)
	}
	if cfg.ReplicationFactor > 0 && cfg.MinInsyncReplicas > int(cfg.ReplicationFactor) {
		q.fail("min_insync_replicas=%d is above replication_factor=%d: no copy could ever be confirmed", cfg.MinInsyncReplicas, cfg.ReplicationFactor)
	}
	if v := q.str("tiers"); v != "" {
		t, err := parseTiers(v)
		if err != nil {
			q.fail("tiers=%q: %v", v, err)
		}
		cfg.Tiers = t
	}
	switch v := q.str("retry"); v {
	case "", "topics":
	case "in-place":
		cfg.RetryMode = kafka.RetryInPlace
	default:
		q.fail("retry=%q: want topics or in-place", v)
	}
	secure := kafkaSecurity(u, q, o.logger)
	consumerProtocol := false
	switch v := q.str("group_protocol"); v {
	case "", "classic":
	case "consumer":
		consumerProtocol = true
		cfg.Opts = append(cfg.Opts, kgo.ServerSideBalancer())
	default:
		q.fail("group_protocol=%q: want classic or consumer", v)
	}
	if v := q.str("session_timeout"); v != "" {
		d, err := time.ParseDuration(v)
		switch {
		case consumerProtocol:
			q.fail("session_timeout=%s: under group_protocol=consumer the session timeout is the broker's group.consumer.session.timeout.ms; remove it, or use group_protocol=classic", v)
		case err != nil || d <= 0:
			q.fail("session_timeout=%q: want a positive duration such as 45s", v)
		default:
			cfg.Opts = append(cfg.Opts, kgo.SessionTimeout(d), kgo.HeartbeatInterval(min(heartbeatIntervalMax, d/3)))
		}
	}
	if u.Path != "" && u.Path != "/" {
		q.fail("%s:// URLs take no path, got %q", u.Scheme, u.Path)
	}
	var brokers []string
	for h := range strings.SplitSeq(u.Host, ",") {
		if h == "" {
			continue
		}
		if !strings.Contains(h, ":") {
			h += ":9092"
		}
		brokers = append(brokers, h)
	}
	if len(brokers) == 0 {
		q.fail("no broker address; write %s://host:port[,host:port]", u.Scheme)
	}
	if err := q.err(); err != nil {
		return nil, err
	}
	cfg.Brokers = brokers
	cfg.Logger = o.logger
	cfg.Opts = append(slices.Clone(secure), cfg.Opts...) // security for every client, then the group's options
	c, err := kafka.NewClient(brokers, append(slices.Clone(secure), kgo.ProducerLinger(0), kgo.RequiredAcks(kgo.AllISRAcks()))...)
	if err != nil {
		return nil, err
	}
	pctx, cancel := context.WithTimeout(ctx, kafka.ConnectTimeout)
	defer cancel()
	if err := c.Ping(pctx); err != nil {
		c.Close()
		return nil, fmt.Errorf("no Kafka broker answers at %s: %w", strings.Join(brokers, ","), err)
	}
	return &kafkaBroker{cfg: cfg, c: c, created: map[string]bool{}}, nil
}

// heartbeatIntervalMax is franz-go's default heartbeat interval, kept for
// session timeouts of 9s and more (Kafka advises at most a third of it).
const heartbeatIntervalMax = 3 * time.Second

func parseTiers(s string) (retry.Tiers, error) {
	var t retry.Tiers
	for part := range strings.SplitSeq(s, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(part))
		if err != nil {
			return nil, err
		}
		t = append(t, d)
	}
	return t, t.Validate()
}

type kafkaBroker struct {
	cfg kafka.Config
	c   *kafka.Client

	mu      sync.Mutex
	created map[string]bool
}

func (k *kafkaBroker) Kind() string { return "kafka" }

func (k *kafkaBroker) Source(ctx context.Context, source, consumerName string) (consumer.Source, error) {
	if err := checkNames(source, consumerName); err != nil {
		return nil, err
	}
	cfg := k.cfg
	cfg.Topic, cfg.Group = source, consumerName
	return kafka.New(ctx, cfg)
}

// ensureTopic creates topic when absent (once per broker value).
func (k *kafkaBroker) ensureTopic(ctx context.Context, topic string) error {
	k.mu.Lock()
	done := k.created[topic]
	k.mu.Unlock()
	if done {
		return nil
	}
	var configs map[string]*string
	if n := k.cfg.MinInsyncReplicas; n > 0 {
		v := strconv.Itoa(n)
		configs = map[string]*string{"min.insync.replicas": &v}
	}
	if err := k.c.CreateTopicWithConfigs(ctx, topic, k.cfg.TopicPartitions, k.cfg.ReplicationFactor, configs); err != nil {
		return err
	}
	k.mu.Lock()
	k.created[topic] = true
	k.mu.Unlock()
	return nil
}

func (k *kafkaBroker) Publish(ctx context.Context, source string, msgs ...*consumer.Message) error {
	if len(msgs) == 0 {
		return nil
	}
	if err := k.ensureTopic(ctx, source); err != nil {
		return err
	}
	return k.c.Publish(ctx, source, msgs...)
}

func (k *kafkaBroker) DeadLetters(ctx context.Context, source, consumerName string, limit int) ([]DeadLetter, error) {
	s, err := k.session(ctx, source, consumerName)
	if err != nil {
		return nil, err
	}
	return listDeadLetters(ctx, s, limit)
}

func (k *kafkaBroker) Redrive(ctx context.Context, source, consumerName string, opts RedriveOptions) (RedriveResult, error) {
	s, err := k.session(ctx, source, consumerName)
	if err != nil {
		return RedriveResult{}, err
	}
	return redrive(ctx, s, func(ctx context.Context, msgs ...*consumer.Message) error { return k.Publish(ctx, source, msgs...) }, opts)
}

func (k *kafkaBroker) Backlog(ctx context.Context, source, consumerName string) ([]consumer.Backlog, error) {
	if err := checkNames(source, consumerName); err != nil {
		return nil, err
	}
	if err := checkConsumer(ctx, k, source, consumerName); err != nil {
		return nil, err
	}
	lines, err := k.c.Backlog(ctx, source, consumerName)
	if errors.Is(err, kafka.ErrNoTopic) {
		return nil, noSource("kafka topic", source)
	}
	return lines, err
}

func (k *kafkaBroker) Consumers(ctx context.Context, source string) ([]string, error) {
	groups, err := k.c.Groups(ctx, source)
	if errors.Is(err, kafka.ErrNoTopic) {
		return nil, noSource("kafka topic", source)
	}
	return sortedUnique(groups), err
}

func (k *kafkaBroker) hasConsumer(ctx context.Context, source, consumerName string) (bool, error) {
	ok, err := k.c.HasGroup(ctx, source, consumerName)
	if errors.Is(err, kafka.ErrNoTopic) {
		return false, noSource("kafka topic", source)
	}
	return ok, err
}

func (k *kafkaBroker) Close() error {
	k.c.Close()
	return nil
}

// kafkaSession is a dlqSession over a kafka.DeadLetterReader.
type kafkaSession struct{ r *kafka.DeadLetterReader }

func (k *kafkaBroker) session(ctx context.Context, source, consumerName string) (kafkaSession, error) {
	if err := checkNames(source, consumerName); err != nil {
		return kafkaSession{}, err
	}
	if err := checkConsumer(ctx, k, source, consumerName); err != nil {
		return kafkaSession{}, err
	}
	r, err := k.c.ReadDeadLetters(ctx, source, consumerName)
	if errors.Is(err, kafka.ErrNoTopic) {
		return kafkaSession{}, noSource("kafka topic", source)
	}
	return kafkaSession{r}, err
}

func (s kafkaSession) total() int { return s.r.Total() }

func (s kafkaSession) next(ctx context.Context, n int) ([]heldLetter, error) {
	msgs, err := s.r.Next(ctx, n)
	out := make([]heldLetter, len(msgs))
	for i, m := range msgs {
		out[i] = heldLetter{msg: m, remove: func(context.Context) error { s.r.Remove(m); return nil }}
	}
	return out, err
}

func (s kafkaSession) close(ctx context.Context) error { return s.r.Close(ctx) }
