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

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/oncely/oncely/adapters/kafka"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/retry"
)

// openKafka opens kafka://host:port[,host:port] with adapters/kafka. The
// consumer name is the consumer group. Query parameters:
//
//	instance_id=ID        static membership (kafka.Config.InstanceID): a restarted
//	                      consumer takes its partitions back at once; unique per live member
//	partitions=N          partition count of topics created (default: the source's, else the broker's)
//	replication=N         replication factor of topics created (default: the broker's)
//	tiers=1s,10s,1m       retry topic delays (default 1s,10s,1m,10m,1h)
//	retry=topics|in-place retry mode (default topics)
//
// Publish creates the topic when absent. Dead letters are read from
// "<source>.<consumer>.dlq" starting at the committed offsets of the group
// "<source>.<consumer>.dlq.redrive", which Redrive advances past the records
// it moved; records a filter skipped (and everything after them in their
// partition) stay listed.
func openKafka(ctx context.Context, u *url.URL, o options) (Broker, error) {
	q := newQuery(u)
	var cfg kafka.Config
	cfg.InstanceID = q.str("instance_id")
	if v := q.str("partitions"); v != "" {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil || n < 1 {
			q.fail("partitions=%q: want a positive integer", v)
		}
		cfg.TopicPartitions = int32(n)
	}
	if v := q.str("replication"); v != "" {
		n, err := strconv.ParseInt(v, 10, 16)
		if err != nil || n < 1 {
			q.fail("replication=%q: want a positive integer", v)
		}
		cfg.ReplicationFactor = int16(n)
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
	if u.User != nil {
		q.fail("kafka:// URLs take no user or password (SASL is not configurable by URL)")
	}
	if u.Path != "" && u.Path != "/" {
		q.fail("kafka:// URLs take no path, got %q", u.Path)
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
		q.fail("no broker address; write kafka://host:port[,host:port]")
	}
	if err := q.err(); err != nil {
		return nil, err
	}
	cfg.Brokers = brokers
	cfg.Logger = o.logger
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ProducerLinger(0), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		return nil, err
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := cl.Ping(pctx); err != nil {
		cl.Close()
		return nil, fmt.Errorf("no Kafka broker answers at %s: %w", strings.Join(brokers, ","), err)
	}
	return &kafkaBroker{cfg: cfg, cl: cl, adm: kadm.NewClient(cl), created: map[string]bool{}}, nil
}

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
	cl  *kgo.Client
	adm *kadm.Client

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
	parts, rf := k.cfg.TopicPartitions, k.cfg.ReplicationFactor
	if parts == 0 {
		parts = -1
	}
	if rf == 0 {
		rf = -1
	}
	resp, err := k.adm.CreateTopic(ctx, parts, rf, nil, topic)
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("creating topic %s: %w", topic, err)
	}
	if resp.Err != nil && !errors.Is(resp.Err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("creating topic %s: %w %s", topic, resp.Err, resp.ErrMessage)
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
	recs := make([]*kgo.Record, len(msgs))
	for i, m := range msgs {
		if m == nil {
			return fmt.Errorf("kafka: Publish: message %d is nil", i)
		}
		recs[i] = kafkaRecord(source, m)
	}
	return k.cl.ProduceSync(ctx, recs...).FirstErr()
}

// kafkaRecord is m as a record on topic, its ID in the message-id header.
func kafkaRecord(topic string, m *consumer.Message) *kgo.Record {
	r := &kgo.Record{Topic: topic, Value: m.Body}
	if m.Key != "" {
		r.Key = []byte(m.Key)
	}
	keys := make([]string, 0, len(m.Headers))
	for name := range m.Headers {
		if name != consumer.HeaderMessageID {
			keys = append(keys, name)
		}
	}
	slices.Sort(keys)
	if m.ID != "" {
		r.Headers = append(r.Headers, kgo.RecordHeader{Key: consumer.HeaderMessageID, Value: []byte(m.ID)})
	}
	for _, name := range keys {
		r.Headers = append(r.Headers, kgo.RecordHeader{Key: name, Value: []byte(m.Headers[name])})
	}
	return r
}

// kafkaMessage is r as a Message, its ID from message-id or ce_id.
func kafkaMessage(r *kgo.Record) *consumer.Message {
	h := make(map[string]string, len(r.Headers))
	for _, kv := range r.Headers {
		h[kv.Key] = string(kv.Value)
	}
	id := h[consumer.HeaderMessageID]
	if id == "" {
		id = h[kafka.HeaderCloudEventsID]
	}
	return &consumer.Message{ID: id, Key: string(r.Key), Body: r.Value, Headers: h, Source: r.Topic,
		Attempt: consumer.AttemptFromHeaders(h), Partition: r.Partition, Offset: r.Offset, Timestamp: r.Timestamp}
}

// redriveGroup is the group whose committed offsets mark how far a DLQ
// topic was redriven.
func redriveGroup(dlq string) string { return dlq + ".redrive" }

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
	return redrive(ctx, s, func(ctx context.Context, m *consumer.Message) error { return k.Publish(ctx, source, m) }, opts)
}

func (k *kafkaBroker) Backlog(ctx context.Context, source, consumerName string) ([]consumer.Backlog, error) {
	if err := checkNames(source, consumerName); err != nil {
		return nil, err
	}
	dlq := kafka.DeadLetterTopic(source, consumerName)
	all, err := k.adm.ListTopics(ctx)
	if err != nil {
		return nil, fmt.Errorf("kafka: listing topics: %w", err)
	}
	if !all.Has(source) {
		return nil, fmt.Errorf("kafka: topic %s does not exist", source)
	}
	topics := []string{source}
	prefix := source + "." + consumerName + ".retry."
	for _, t := range all.Names() {
		if strings.HasPrefix(t, prefix) {
			topics = append(topics, t)
		}
	}
	hasDLQ := all.Has(dlq)
	if hasDLQ {
		topics = append(topics, dlq)
	}
	ends, err := k.adm.ListEndOffsets(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("kafka: listing end offsets: %w", err)
	}
	starts, err := k.adm.ListStartOffsets(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("kafka: listing start offsets: %w", err)
	}
	committed, err := fetchOffsets(ctx, k.adm, consumerName)
	if err != nil {
		return nil, fmt.Errorf("kafka: fetching committed offsets of group %s: %w", consumerName, err)
	}
	redriven, err := fetchOffsets(ctx, k.adm, redriveGroup(dlq))
	if err != nil {
		return nil, fmt.Errorf("kafka: fetching the redrive offsets of %s: %w", dlq, err)
	}
	var out []consumer.Backlog
	var depth int64
	var ferr error
	ends.Each(func(end kadm.ListedOffset) {
		if end.Err != nil {
			ferr = errors.Join(ferr, fmt.Errorf("kafka: end offset of %s[%d]: %w", end.Topic, end.Partition, end.Err))
			return
		}
		base := int64(0)
		if st, ok := starts.Lookup(end.Topic, end.Partition); ok && st.Err == nil {
			base = st.Offset
		}
		group := committed
		if end.Topic == dlq {
			group = redriven
		}
		if c, ok := group.Lookup(end.Topic, end.Partition); ok && c.Err == nil && c.At >= base {
			base = c.At
		}
		if end.Topic == dlq {
			depth += max(0, end.Offset-base)
			return
		}
		out = append(out, consumer.Backlog{Source: end.Topic, Partition: end.Partition, Lag: max(0, end.Offset-base), DeadLetters: -1})
	})
	if ferr != nil {
		return nil, ferr
	}
	slices.SortFunc(out, func(a, b consumer.Backlog) int {
		if c := strings.Compare(a.Source, b.Source); c != 0 {
			return c
		}
		return int(a.Partition - b.Partition)
	})
	if !hasDLQ {
		depth = 0
	}
	return append(out, consumer.Backlog{Source: source, Partition: -1, Lag: -1, DeadLetters: depth}), nil
}

func (k *kafkaBroker) Close() error {
	k.cl.Close()
	return nil
}

// kafkaSession reads a DLQ topic from the redrive group's offsets to the
// end offsets taken at the start.
type kafkaSession struct {
	k       *kafkaBroker
	topic   string
	group   string
	cl      *kgo.Client // nil when there is nothing to read
	start   map[int32]int64
	end     map[int32]int64
	reached map[int32]bool
	removed map[int32]map[int64]bool
	mu      sync.Mutex
	buf     []*kgo.Record
	count   int
}

func (k *kafkaBroker) session(ctx context.Context, source, consumerName string) (*kafkaSession, error) {
	if err := checkNames(source, consumerName); err != nil {
		return nil, err
	}
	dlq := kafka.DeadLetterTopic(source, consumerName)
	s := &kafkaSession{k: k, topic: dlq, group: redriveGroup(dlq), start: map[int32]int64{}, end: map[int32]int64{},
		reached: map[int32]bool{}, removed: map[int32]map[int64]bool{}}
	topics, err := k.adm.ListTopics(ctx, dlq)
	if err != nil {
		return nil, fmt.Errorf("kafka: describing %s: %w", dlq, err)
	}
	if !topics.Has(dlq) {
		return s, nil // no dead-letter topic yet: nothing dead-lettered
	}
	ends, err := k.adm.ListEndOffsets(ctx, dlq)
	if err != nil {
		return nil, fmt.Errorf("kafka: end offsets of %s: %w", dlq, err)
	}
	starts, err := k.adm.ListStartOffsets(ctx, dlq)
	if err != nil {
		return nil, fmt.Errorf("kafka: start offsets of %s: %w", dlq, err)
	}
	committed, err := fetchOffsets(ctx, k.adm, s.group)
	if err != nil {
		return nil, fmt.Errorf("kafka: redrive offsets of %s: %w", dlq, err)
	}
	assign := map[int32]kgo.Offset{}
	var ferr error
	ends.Each(func(e kadm.ListedOffset) {
		if e.Err != nil {
			ferr = errors.Join(ferr, e.Err)
			return
		}
		from := int64(0)
		if st, ok := starts.Lookup(dlq, e.Partition); ok && st.Err == nil {
			from = st.Offset
		}
		if c, ok := committed.Lookup(dlq, e.Partition); ok && c.Err == nil && c.At > from {
			from = c.At
		}
		s.start[e.Partition], s.end[e.Partition] = from, e.Offset
		if from < e.Offset {
			assign[e.Partition] = kgo.NewOffset().At(from)
			s.count += int(e.Offset - from)
		} else {
			s.reached[e.Partition] = true
		}
	})
	if ferr != nil {
		return nil, fmt.Errorf("kafka: offsets of %s: %w", dlq, ferr)
	}
	if len(assign) == 0 {
		return s, nil
	}
	s.cl, err = kgo.NewClient(kgo.SeedBrokers(k.cfg.Brokers...), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{dlq: assign}))
	if err != nil {
		return nil, err
	}
	return s, nil
}

func (s *kafkaSession) total() int { return s.count }

func (s *kafkaSession) done() bool {
	for p := range s.end {
		if !s.reached[p] {
			return false
		}
	}
	return true
}

func (s *kafkaSession) next(ctx context.Context, n int) ([]heldLetter, error) {
	for s.cl != nil && len(s.buf) < n && !s.done() {
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		fs := s.cl.PollRecords(pctx, n)
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
			return nil, fmt.Errorf("kafka: reading %s: no records within 10s although the end offsets say more are there", s.topic)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset >= s.end[r.Partition] {
				s.reached[r.Partition] = true
				return
			}
			s.buf = append(s.buf, r)
			if r.Offset == s.end[r.Partition]-1 {
				s.reached[r.Partition] = true
			}
		})
	}
	take := s.buf[:min(n, len(s.buf))]
	s.buf = s.buf[len(take):]
	out := make([]heldLetter, len(take))
	for i, r := range take {
		out[i] = heldLetter{msg: kafkaMessage(r), remove: func(context.Context) error {
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.removed[r.Partition] == nil {
				s.removed[r.Partition] = map[int64]bool{}
			}
			s.removed[r.Partition][r.Offset] = true
			return nil
		}}
	}
	return out, nil
}

// close commits, per partition, the offset after the contiguous run of
// removed records from the session's start.
func (s *kafkaSession) close(ctx context.Context) error {
	if s.cl == nil {
		return nil
	}
	defer s.cl.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	var offs kadm.Offsets
	for p, from := range s.start {
		at := from
		for s.removed[p][at] {
			at++
		}
		if at > from {
			offs.Add(kadm.Offset{Topic: s.topic, Partition: p, At: at, LeaderEpoch: -1})
		}
	}
	if len(offs) == 0 {
		return nil
	}
	resp, err := s.k.adm.CommitOffsets(ctx, s.group, offs)
	if err != nil {
		return fmt.Errorf("kafka: recording the redrive position of %s: %w", s.topic, err)
	}
	if err := resp.Error(); err != nil {
		return fmt.Errorf("kafka: recording the redrive position of %s: %w", s.topic, err)
	}
	return nil
}

// fetchOffsets returns group's committed offsets; none for a group that
// does not exist yet.
func fetchOffsets(ctx context.Context, adm *kadm.Client, group string) (kadm.OffsetResponses, error) {
	offs, err := adm.FetchOffsets(ctx, group)
	if errors.Is(err, kerr.GroupIDNotFound) {
		return kadm.OffsetResponses{}, nil
	}
	return offs, err
}
