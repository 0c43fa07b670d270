package kafka

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// ErrTopicCreation wraps every failure to create or find a topic at start-up.
var ErrTopicCreation = errors.New("kafka: topic not available")

// ErrNoTopic is returned (wrapped) by Client.Backlog and
// Client.ReadDeadLetters for a topic that does not exist; they create
// nothing.
var ErrNoTopic = errors.New("topic does not exist")

// topicReadyTimeout bounds how long ensureTopics waits for topics it created
// to have a leader for every partition, when ctx has no earlier deadline.
const topicReadyTimeout = 30 * time.Second

// tierRetentionMargin is what a retry tier topic keeps its records beyond
// its delay, so a consumer that was down for up to a week still finds its
// retries; a cluster whose default retention is shorter than a tier's delay
// would otherwise delete copies before they are due.
const tierRetentionMargin = 7 * 24 * time.Hour

// tierTopicConfig is the configuration of a retry tier topic with delay d:
// retention.ms of d plus tierRetentionMargin.
func tierTopicConfig(d time.Duration) map[string]*string {
	ms := strconv.FormatInt((d + tierRetentionMargin).Milliseconds(), 10)
	return map[string]*string{"retention.ms": &ms}
}

// topicCreation is what topics are created with; a zero field means the
// broker's default, except partitions (see ensureTopics).
type topicCreation struct {
	partitions        int32
	replicationFactor int16
	minInsyncReplicas int
}

// ensureTopics creates the absent topics among topics (or, with skip, checks
// that they all exist), through cl, each created with its configs entry (nil:
// the broker's defaults) plus min.insync.replicas when create sets it, and
// create's replication factor. The first topic is the source: when
// create.partitions is 0, created topics get its partition count. It returns once
// the created topics have a leader for every partition, so a Source is ready
// to produce copies (and Probe answers) as soon as New returns: on Apache
// Kafka a topic is briefly unknown to the brokers after CreateTopics returns.
func ensureTopics(ctx context.Context, cl *kgo.Client, topics []string, configs map[string]map[string]*string, create topicCreation, skip bool) error {
	partitions, rf := create.partitions, create.replicationFactor
	adm := kadm.NewClient(cl)
	md, err := adm.ListTopics(ctx, topics...)
	if err != nil {
		return fmt.Errorf("%w: listing topics: %w", ErrTopicCreation, err)
	}
	var missing []string
	for _, t := range topics {
		d, ok := md[t]
		if !ok || errors.Is(d.Err, kerr.UnknownTopicOrPartition) {
			missing = append(missing, t)
			continue
		}
		if d.Err != nil {
			return fmt.Errorf("%w: describing %q: %w", ErrTopicCreation, t, d.Err)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if skip {
		return fmt.Errorf("%w: %q absent and SkipTopicCreation is set; create it first", ErrTopicCreation, missing)
	}
	if partitions == 0 {
		partitions = -1
		if d, ok := md[topics[0]]; ok && d.Err == nil && len(d.Partitions) > 0 {
			partitions = int32(len(d.Partitions))
		}
	}
	if rf == 0 {
		rf = -1
	}
	var errs []error
	for _, t := range missing {
		resp, err := adm.CreateTopics(ctx, partitions, rf, withMinInsync(configs[t], create.minInsyncReplicas), t)
		if err != nil {
			return fmt.Errorf("%w: creating %q: %w", ErrTopicCreation, t, err)
		}
		r, ok := resp[t]
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("creating %q: no answer from the broker", t))
		case r.Err == nil, errors.Is(r.Err, kerr.TopicAlreadyExists):
		default:
			msg := r.ErrMessage
			if msg != "" {
				msg = " (" + msg + ")"
			}
			errs = append(errs, fmt.Errorf("creating %q refused: %w%s", t, r.Err, msg))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrTopicCreation, errors.Join(errs...))
	}
	return waitReady(ctx, cl, missing)
}

// withMinInsync returns configs plus min.insync.replicas=n when n > 0,
// leaving configs unchanged.
func withMinInsync(configs map[string]*string, n int) map[string]*string {
	if n <= 0 {
		return configs
	}
	out := make(map[string]*string, len(configs)+1)
	maps.Copy(out, configs)
	v := strconv.Itoa(n)
	out["min.insync.replicas"] = &v
	return out
}

// waitReady polls until topics are ready (topicsReady), ctx is done or
// topicReadyTimeout passed.
func waitReady(ctx context.Context, cl *kgo.Client, topics []string) error {
	ctx, cancel := context.WithTimeout(ctx, topicReadyTimeout)
	defer cancel()
	for {
		err := topicsReady(ctx, cl, topics)
		if err == nil {
			return nil
		}
		t := time.NewTimer(20 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w: created %q, but they are not ready: %w", ErrTopicCreation, topics, err)
		case <-t.C:
		}
	}
}
