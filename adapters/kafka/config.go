package kafka

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/oncely/oncely/adapters/internal/startpos"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/retry"
)

// Defaults applied to zero fields of Config.
const (
	MaxPollRecordsDefault       = 1000
	MaxPartitionInFlightDefault = 50000
	CommitIntervalDefault       = time.Second
	RevokeTimeoutDefault        = 20 * time.Second
	RebalanceTimeoutDefault     = time.Minute
)

// FetchMaxWaitDefault is the adapter's franz-go FetchMaxWait (franz-go's own
// default is 5s): how long the broker may hold a fetch with nothing to return.
// A partition resumed after a pause (a retry tier's record falling due, or
// MaxPartitionInFlight settling) is fetched only after the fetch in flight
// returns, so this bounds how late it resumes when the other partitions are
// idle. (At start-up the retry tiers' topics are fetched only after the first
// poll, or FetchMaxWaitDefault after New, so that a first fetch of only
// empty tier partitions cannot hold the source topic's first records back
// this long.) Pass kgo.FetchMaxWait in Config.Opts to change it.
const FetchMaxWaitDefault = 500 * time.Millisecond

// MetadataMinAgeDefault is the adapter's franz-go MetadataMinAge (franz-go's
// own is 5 s): the shortest interval between two metadata refreshes the
// client triggers itself. A topic the broker lost (deleted, or gone with a
// broker that restarted empty) is only noticed, and a copy to it only
// fails so it can be created again, after several refreshes; at 5 s apart
// they took longer than the fault matrix's resume bound. Overridden by a
// kgo.MetadataMinAge in Config.Opts.
const MetadataMinAgeDefault = time.Second

// closeCommitTimeout bounds Close's final commit when its ctx has no
// earlier deadline.
const closeCommitTimeout = 30 * time.Second

// HeaderCloudEventsID is the CloudEvents Kafka binding's id header, accepted
// as the message ID after HeaderMessageID.
const HeaderCloudEventsID = "ce_id"

// RetryMode chooses how Delivery.Retry keeps a failed record for later.
type RetryMode int

const (
	// RetryTopics (the default) produces the failed record to a delay-tier
	// topic "<topic>.<group>.retry.<tier>" and commits past the original once
	// the broker acknowledged the copy. The source partition keeps flowing;
	// the retried record loses its place in its key's order.
	RetryTopics RetryMode = iota

	// RetryInPlace (blocking retry) produces nothing: the failed record
	// keeps its place. Its partition stops delivering at that record, and
	// after the delay the record is delivered again, followed by the records
	// behind it. Later deliveries of the same key that were already handed
	// out (all later ones with InPlacePartitionOrder) lose their lease
	// (Lost) and come again after it, so key order (partition order) holds.
	// The cost is liveness: one failing record stalls its whole partition
	// until it succeeds or is dead-lettered. The attempt count of an
	// in-place retry lives in process memory: after a restart or rebalance
	// the record starts again at attempt 1.
	RetryInPlace
)

// String names the mode.
func (m RetryMode) String() string {
	switch m {
	case RetryTopics:
		return "topics"
	case RetryInPlace:
		return "in-place"
	}
	return fmt.Sprintf("RetryMode(%d)", int(m))
}

// Config configures a Source. Brokers, Topic and Group are required; every
// other zero field means the documented default.
type Config struct {
	// Brokers are the seed brokers, "host:port". Required.
	Brokers []string

	// Topic is the source topic. Required.
	Topic string

	// Group is the consumer group, and the consumer name: it must equal
	// consumer.Config.Name, since retry and dead-letter topics are named
	// "<Topic>.<Group>.retry.<tier>" and "<Topic>.<Group>.dlq" (RetryTopic,
	// DeadLetterTopic). Required.
	Group string

	// InstanceID enables static membership (Kafka's group.instance.id): a
	// restarted member with the same ID takes its partitions back at once
	// instead of waiting out the session timeout, and closing does not leave
	// the group. Must be unique per live member. Defaults to none (dynamic
	// membership).
	InstanceID string

	// MaxPollRecords caps the records taken by one poll (one Receive).
	// Defaults to MaxPollRecordsDefault (1000); Receive never takes more
	// than the runtime asks for.
	MaxPollRecords int

	// MaxPartitionInFlight bounds the records of one partition taken from
	// the broker from its oldest unsettled record on, settled or not (the
	// records an offset commit cannot pass yet). A partition at the bound is
	// paused (fetching stops) until half of them settled. Pausing drops what
	// franz-go buffered for the partition (it is fetched again on resume,
	// after the fetch in flight, which waits up to FetchMaxWaitDefault
	// when no other partition has records), so keep it well above the
	// consumer's MaxInFlight: handlers settle out of offset order, and a
	// partition's span of taken records reaches a few times its unsettled
	// ones. It is a memory bound for a stuck partition (roughly 400 bytes per
	// record besides its key, value and headers), not the throttle (the
	// runtime throttles by not calling Receive). Defaults to
	// MaxPartitionInFlightDefault (50000); must be >= MaxPollRecords.
	MaxPartitionInFlight int

	// CommitInterval is the period of background commits of the settled
	// offsets. Commits also happen synchronously on revoke and Close.
	// Defaults to CommitIntervalDefault (1s).
	CommitInterval time.Duration

	// RevokeTimeout bounds how long a revoke waits for the deliveries of the
	// revoked partitions to settle before committing what did settle; the
	// rest lose their lease (Lost is closed) and are redelivered to the new
	// owner. Must be below RebalanceTimeout. Defaults to RevokeTimeoutDefault
	// (20s).
	RevokeTimeout time.Duration

	// RebalanceTimeout is Kafka's rebalance.timeout.ms. Defaults to
	// RebalanceTimeoutDefault (1m).
	RebalanceTimeout time.Duration

	// RetryMode chooses retry topics (the default) or in-place blocking
	// retry.
	RetryMode RetryMode

	// InPlacePartitionOrder, with RetryInPlace, makes an in-place retry
	// abandon every later delivery of the partition, not only those of the
	// same key. Set it when the consumer runs with consumer.OrderByPartition.
	// Defaults to false (key order).
	InPlacePartitionOrder bool

	// Tiers are the delays of the retry topics. A retry after d goes to
	// Tiers.Tier(d), and its record is not delivered before its
	// oncely-retry-not-before header. Only the tiers the default retry
	// policy reaches (by New) and those the consumer's policy reaches (by
	// the first Receive, see LimitTiers) are created; a longer delay goes
	// to the largest of them. Defaults to
	// retry.DefaultTiers (1s, 10s, 1m, 10m, 1h). Ignored with RetryInPlace.
	Tiers retry.Tiers

	// ClaimRetention is the idempotency store's claim retention, when known.
	// Tiers above it are refused (a retried copy would arrive after its
	// claim was pruned and run twice), and Capabilities.MaxDelay reports it
	// so the runtime refuses a retry policy with longer delays. Defaults to 0
	// (not checked).
	ClaimRetention time.Duration

	// TopicPartitions is the partition count of topics the Source creates
	// (the source, retry and dead-letter topics). Defaults to the source
	// topic's partition count when it exists, else the broker's default.
	TopicPartitions int32

	// ReplicationFactor is the replication factor of the topics the Source
	// creates (the source when absent, the retry and dead-letter topics);
	// 3 on a three-broker cluster keeps them through the loss of a broker.
	// A topic that exists keeps its own. More than the cluster has brokers
	// fails New with ErrTopicCreation. Defaults to 0: the broker's
	// default.replication.factor.
	ReplicationFactor int16

	// MinInsyncReplicas is the min.insync.replicas topic config of the
	// topics the Source creates: a copy is confirmed (acks=all) only once
	// this many replicas stored it, so 2 with ReplicationFactor 3 keeps every
	// confirmed copy through the loss of a broker. A topic that exists keeps
	// its own. At most ReplicationFactor when both are set. Defaults to 0:
	// the broker's min.insync.replicas.
	MinInsyncReplicas int

	// SkipTopicCreation makes New only check that the source and
	// dead-letter topics exist, and the first Receive that the retry topics
	// it needs exist (failing until they do), instead of creating them.
	// Defaults to false (create when absent).
	SkipTopicCreation bool

	// IDHeaders are the headers tried, in order, for Message.ID. Defaults to
	// HeaderMessageID ("message-id") then HeaderCloudEventsID ("ce_id").
	IDHeaders []string

	// DeriveID, when no ID header is present, uses "<topic>/<partition>/<offset>"
	// as the ID; stable because Kafka never reuses an offset. Retried and
	// dead-lettered copies carry it in their message-id header. Defaults to
	// false: a record without an ID is dead-lettered as missing-id.
	DeriveID bool

	// Start is where a new consumer group starts on the source topic:
	// "earliest" (the oldest record kept), "latest" (after the last record
	// when the group is created) or an RFC 3339 time (the first record
	// stamped at or after it; the oldest kept when the time is before the
	// retention). It applies only while the group has no committed offset on
	// the source topic: New then commits the start offsets for the group
	// before joining, so every later member and restart resumes from there.
	// An existing group keeps its offsets (use oncely replay to move them),
	// and retry topics, and partitions added to the topic later, always start
	// at their oldest record. Defaults to "earliest".
	Start string

	// Logger receives the adapter's logs. Defaults to slog.Default().
	Logger *slog.Logger

	// Opts are extra franz-go options, applied after FetchMaxWaitDefault
	// and the group balancers, and before the adapter's own (seed brokers,
	// group, topics, manual commits, blocked rebalances and the partition
	// callbacks always win).
	//
	// The default balancer spreads each topic's partitions evenly over the
	// group's members on its own — the source topic and every retry tier —
	// with cooperative-sticky rebalancing (the group protocol stays
	// "cooperative-sticky"); under kgo.ServerSideBalancer the broker's range
	// assignor, which also spreads each topic on its own. A kgo.Balancers
	// option here replaces it.
	//
	// Options that would commit before
	// processing (AutoCommitMarks), consume other topics (ConsumeRegex,
	// ConsumePartitions) or confirm a retry or dead-letter copy before every
	// in-sync replica stored it (RequiredAcks other than kgo.AllISRAcks, the
	// default) are refused: the original is committed once its copy is
	// confirmed, so a copy confirmed by the leader alone is lost with it.
	Opts []kgo.Opt
}

func (c Config) withDefaults() Config {
	if c.MaxPollRecords == 0 {
		c.MaxPollRecords = MaxPollRecordsDefault
	}
	if c.MaxPartitionInFlight == 0 {
		c.MaxPartitionInFlight = max(MaxPartitionInFlightDefault, c.MaxPollRecords)
	}
	if c.CommitInterval == 0 {
		c.CommitInterval = CommitIntervalDefault
	}
	if c.RevokeTimeout == 0 {
		c.RevokeTimeout = RevokeTimeoutDefault
	}
	if c.RebalanceTimeout == 0 {
		c.RebalanceTimeout = RebalanceTimeoutDefault
	}
	if c.Tiers == nil {
		c.Tiers = retry.DefaultTiers
	}
	if c.IDHeaders == nil {
		c.IDHeaders = []string{consumer.HeaderMessageID, HeaderCloudEventsID}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// validate reports every problem at once, after defaults.
func (c Config) validate() error {
	var errs []error
	if len(c.Brokers) == 0 {
		errs = append(errs, errors.New("missing Brokers (the seed brokers)"))
	}
	if c.Topic == "" {
		errs = append(errs, errors.New("missing Topic (the source topic)"))
	}
	if c.Group == "" {
		errs = append(errs, errors.New("missing Group (the consumer name)"))
	}
	if strings.Contains(c.Topic, ".retry.") || strings.HasSuffix(c.Topic, ".dlq") {
		errs = append(errs, fmt.Errorf("topic %q looks like a retry or dead-letter topic; consume the source topic instead", c.Topic))
	}
	if c.Topic != "" && c.Group != "" && (c.RetryMode != RetryTopics || c.Tiers.Validate() == nil) {
		errs = append(errs, checkTopicNames(c.Topic, c.Group, c.Tiers, c.RetryMode == RetryTopics)...)
	}
	if c.MaxPollRecords < 0 {
		errs = append(errs, fmt.Errorf("MaxPollRecords must be > 0, got %d (unbounded polls break backpressure)", c.MaxPollRecords))
	}
	if c.MaxPartitionInFlight < 0 {
		errs = append(errs, fmt.Errorf("MaxPartitionInFlight must be > 0, got %d (unbounded in-flight records)", c.MaxPartitionInFlight))
	} else if c.MaxPartitionInFlight < c.MaxPollRecords {
		errs = append(errs, fmt.Errorf("MaxPartitionInFlight (%d) must be >= MaxPollRecords (%d)", c.MaxPartitionInFlight, c.MaxPollRecords))
	}
	for name, d := range map[string]time.Duration{"CommitInterval": c.CommitInterval, "RevokeTimeout": c.RevokeTimeout, "RebalanceTimeout": c.RebalanceTimeout, "ClaimRetention": c.ClaimRetention} {
		if d < 0 {
			errs = append(errs, fmt.Errorf("%s must be > 0, got %s", name, d))
		}
	}
	if c.RevokeTimeout >= c.RebalanceTimeout {
		errs = append(errs, fmt.Errorf("RevokeTimeout (%s) must be below RebalanceTimeout (%s), or the group evicts this member during a revoke", c.RevokeTimeout, c.RebalanceTimeout))
	}
	switch c.RetryMode {
	case RetryTopics:
		if err := c.Tiers.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("invalid Tiers: %w", err))
		} else if c.ClaimRetention > 0 && c.Tiers[len(c.Tiers)-1] >= c.ClaimRetention {
			errs = append(errs, fmt.Errorf("retry tier %s is not shorter than the claim retention %s: a retried copy could outlive its idempotency claim and run twice", c.Tiers[len(c.Tiers)-1], c.ClaimRetention))
		}
	case RetryInPlace:
	default:
		errs = append(errs, fmt.Errorf("unknown RetryMode %d", int(c.RetryMode)))
	}
	if c.TopicPartitions < 0 {
		errs = append(errs, fmt.Errorf("TopicPartitions must be > 0, got %d", c.TopicPartitions))
	}
	if c.ReplicationFactor < 0 {
		errs = append(errs, fmt.Errorf("ReplicationFactor must be > 0, got %d", c.ReplicationFactor))
	}
	if c.MinInsyncReplicas < 0 {
		errs = append(errs, fmt.Errorf("MinInsyncReplicas must be > 0, got %d", c.MinInsyncReplicas))
	} else if c.ReplicationFactor > 0 && c.MinInsyncReplicas > int(c.ReplicationFactor) {
		errs = append(errs, fmt.Errorf("MinInsyncReplicas (%d) is above ReplicationFactor (%d): no copy could ever be confirmed", c.MinInsyncReplicas, c.ReplicationFactor))
	}
	if _, err := startpos.Parse(c.Start); err != nil {
		errs = append(errs, err)
	}
	if len(c.IDHeaders) == 0 && !c.DeriveID {
		errs = append(errs, errors.New("IDHeaders is empty and DeriveID is off: no record could have an ID"))
	}
	if slices.Contains(c.IDHeaders, "") {
		errs = append(errs, errors.New("IDHeaders contains an empty name"))
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("kafka: invalid config: %w", errors.Join(errs...))
}

// checkOpts refuses franz-go options that break at-least-once or the
// adapter's ownership of the topic list; cl was built from Config.Opts.
// (Auto-commit itself is always disabled by the adapter's own options.)
func checkOpts(cl *kgo.Client) error {
	var errs []error
	if v, _ := cl.OptValue(kgo.AutoCommitMarks).(bool); v {
		errs = append(errs, errors.New("option AutoCommitMarks commits records before the handler settled them; remove it"))
	}
	if v, _ := cl.OptValue(kgo.ConsumeRegex).(bool); v {
		errs = append(errs, errors.New("option ConsumeRegex would treat topic names as patterns; remove it"))
	}
	if v, ok := cl.OptValue(kgo.RequiredAcks).(kgo.Acks); ok && v != kgo.AllISRAcks() {
		errs = append(errs, errors.New("option RequiredAcks below AllISRAcks confirms retry and dead-letter copies a leader failover can lose; remove it"))
	}
	if v, _ := cl.OptValue(kgo.ConsumePartitions).(map[string]map[int32]kgo.Offset); len(v) > 0 {
		errs = append(errs, errors.New("option ConsumePartitions bypasses the consumer group; remove it"))
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("kafka: invalid config: %w", errors.Join(errs...))
}

// creation is how the Source creates the topics it misses.
func (c Config) creation() topicCreation {
	return topicCreation{partitions: c.TopicPartitions, replicationFactor: c.ReplicationFactor, minInsyncReplicas: c.MinInsyncReplicas}
}
