package kafka

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/retry"
)

// Source is a consumer.Source reading a Kafka topic (and its retry topics)
// as a consumer group, with manual commits after processing. It implements
// consumer.Source, consumer.BacklogReporter, consumer.Prober and
// consumer.ConsumerNamer, and its deliveries implement consumer.Leased and
// consumer.CopyTrimmer. Create one with New.
//
// Guarantees: an offset is committed only when it and every offset before it
// in its partition were settled (acked, or copied to a retry or dead-letter
// topic and acknowledged by the broker). Commits run every CommitInterval, on
// revoke (after waiting up to RevokeTimeout for in-flight deliveries of the
// revoked partitions) and on Close; a partition no longer owned is never
// committed. A lost partition's deliveries report Lost and their settlements
// are dropped; the new owner gets them again.
type Source struct {
	cfg   Config
	log   *slog.Logger
	cl    *kgo.Client
	adm   *kadm.Client
	dlq   string
	tiers atomic.Pointer[tierSet] // the retry topics (see tiers.go)
	hops  sync.WaitGroup          // running hops (see hop.go)

	// Copy size limits (see copy.go): the producer's batch limit as
	// configured, and the copy topics' max.message.bytes where known.
	producerMax func(string) int32
	topicMax    atomic.Pointer[map[string]int32]

	// Retry tiers (see tiers.go): the limit consumer.New sets, whether the
	// first Receive created them, and whether their topics, paused until
	// the first poll returns or tierStartDelay has passed, were resumed.
	tierMu       sync.Mutex
	tierLimit    time.Duration
	tierLimited  bool
	tiersMade    atomic.Bool
	tiersResumed bool
	tiersTimer   *time.Timer // set by New, stopped by Close

	commitMu sync.Mutex // serialises commits and ownership changes around them

	mu      sync.Mutex
	parts   map[tp]*partition
	held    []*partition // partitions with records taken but not delivered
	closing bool
	wakeCtx context.Context
	wake    context.CancelFunc

	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error
	stop      chan struct{}
	stopped   chan struct{}

	tierScanDone chan struct{} // closed when scanTiersLoop ended; nil without retry topics

	// cancelCl cancels cl's context: it fails a JoinGroup in flight when
	// leaving the group takes too long (see closeClient).
	cancelCl context.CancelFunc
}

type tp struct {
	topic     string
	partition int32
}

// New connects to the brokers, creates the source and dead-letter topics
// and the retry topics the default retry policy reaches when absent, and
// joins the consumer group, consuming the source and every retry topic of
// (Topic, Group) that exists, and those other replicas create later
// (within tierScanInterval, 10 s, see discover.go). The first Receive creates the further retry
// topics the consumer's policy can reach (see tiers.go). For a group
// without committed offsets on the source topic it first commits the
// offsets of Config.Start (see anchorStart). It fails with every
// configuration problem at once, or with ErrTopicCreation when a topic can
// be neither found nor created. When no broker answers (an address that
// refuses connections, does not resolve, or accepts them but never answers)
// it fails with ErrTopicCreation naming the addresses within ConnectTimeout
// (10s), even when ctx has no deadline.
func New(ctx context.Context, cfg Config) (*Source, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Source{
		cfg:     cfg,
		log:     cfg.Logger.With("broker", "kafka", "topic", cfg.Topic, "group", cfg.Group),
		dlq:     DeadLetterTopic(cfg.Topic, cfg.Group),
		parts:   make(map[tp]*partition),
		stop:    make(chan struct{}),
		stopped: make(chan struct{}),
	}
	s.wakeCtx, s.wake = context.WithCancel(context.Background())
	s.tiers.Store(&tierSet{tierOf: map[string]time.Duration{}, byTier: map[time.Duration]string{}})

	// Options and topics first, with a client that does not join the group
	// (it consumes nothing).
	admCl, err := kgo.NewClient(append(append([]kgo.Opt{}, cfg.Opts...),
		kgo.SeedBrokers(cfg.Brokers...), kgo.ConsumerGroup(cfg.Group))...)
	if err != nil {
		return nil, fmt.Errorf("kafka: %w", err)
	}
	serverSide, _ := admCl.OptValue(kgo.ServerSideBalancer).(bool)
	err = checkOpts(admCl)
	if err == nil {
		if rerr := reach(ctx, admCl, cfg.Brokers); rerr != nil {
			err = fmt.Errorf("%w: %w", ErrTopicCreation, rerr)
		}
	}
	var configs map[string]map[string]*string
	if err == nil && cfg.RetryMode == RetryTopics {
		var ts *tierSet
		if ts, err = existingTiers(ctx, kadm.NewClient(admCl), cfg.Topic, cfg.Group); err == nil {
			ts, configs, _ = ts.with(cfg.Topic, cfg.Group, cfg.Tiers.Upto(retry.Policy{}.Reach()))
			s.tiers.Store(ts)
		}
	}
	consumed := s.consumedTopics()
	if err == nil {
		err = ensureTopics(ctx, admCl, append(slices.Clone(consumed), s.dlq), configs, cfg.creation(), cfg.SkipTopicCreation)
	}
	if err == nil {
		err = anchorStart(ctx, kadm.NewClient(admCl), cfg.Topic, cfg.Group, cfg.Start)
	}
	if err == nil {
		s.producerMax, _ = admCl.OptValue(kgo.ProducerBatchMaxBytesFn).(func(string) int32)
		limits, lerr := copyLimits(ctx, kadm.NewClient(admCl), append(slices.Clone(consumed[1:]), s.dlq))
		if lerr != nil {
			s.log.Warn("could not describe max.message.bytes of the retry and dead-letter topics; copies are fitted to the producer's limit only", "error", lerr)
		}
		s.topicMax.Store(&limits)
	}
	admCl.Close()
	if err != nil {
		return nil, err
	}
	if s.producerMax == nil {
		return nil, errors.New("kafka: the producer's batch limit (ProducerBatchMaxBytes) is unknown")
	}

	opts := append(append([]kgo.Opt{kgo.FetchMaxWait(FetchMaxWaitDefault), kgo.MetadataMinAge(MetadataMinAgeDefault), balancers(serverSide)}, cfg.Opts...),
		kgo.SeedBrokers(cfg.Brokers...),
		kgo.ConsumerGroup(cfg.Group),
		kgo.ConsumeTopics(consumed...),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.RebalanceTimeout(cfg.RebalanceTimeout),
		kgo.OnPartitionsAssigned(s.onAssigned),
		kgo.OnPartitionsRevoked(s.onRevoked),
		kgo.OnPartitionsLost(s.onLost),
		kgo.ProducerBatchMaxBytesFn(s.batchLimit),
	)
	if cfg.InstanceID != "" {
		opts = append(opts, kgo.InstanceID(cfg.InstanceID))
	}
	clCtx, cancelCl := context.WithCancel(context.Background())
	s.cl, err = kgo.NewClient(append(opts, kgo.WithContext(clCtx))...)
	if err != nil {
		cancelCl()
		return nil, fmt.Errorf("kafka: %w", err)
	}
	s.cancelCl = cancelCl
	s.adm = kadm.NewClient(s.cl)
	if tiers := consumed[1:]; len(tiers) > 0 {
		s.cl.PauseFetchTopics(tiers...)
	}
	s.tiersTimer = time.AfterFunc(tierStartDelay, s.startTiers)
	go s.commitLoop()
	if cfg.RetryMode == RetryTopics {
		s.tierScanDone = make(chan struct{})
		go s.scanTiersLoop()
	}
	return s, nil
}

// Capabilities reports Kafka's capability table: partitioned, retries honour
// their delay (retry topics or in-place), no broker delivery counter (the
// attempt travels in the oncely-attempt header), no lease to renew, fan-out
// (each consumer name is its own consumer group and gets every record), no
// prefetch (records are fetched for Receive only).
//
// MaxDelay is ClaimRetention (zero: no limit). The tiers themselves honour
// any delay: a copy not yet due when its tier's delay passed hops to the end
// of its tier again (see hop.go), so neither the longest tier nor a tier
// topic's retention bounds the delay. Only the idempotency claims do: a
// retried copy arriving after the claim of a duplicate that succeeded was
// pruned would run twice.
func (s *Source) Capabilities() consumer.Capabilities {
	return consumer.Capabilities{
		Broker:       "kafka",
		Partitioned:  true,
		NativeDelay:  true,
		RetryInPlace: s.cfg.RetryMode == RetryInPlace,
		MaxDelay:     s.cfg.ClaimRetention,
		FanOut:       true,
		Prefetch:     0,
	}
}

var _ consumer.ConsumerNamer = (*Source)(nil)

// ConsumerName returns Config.Group: the consumer name this Source was
// opened for, which names its consumer group, retry and dead-letter topics.
// consumer.New refuses a Config.Name other than it.
func (s *Source) ConsumerName() string { return s.cfg.Group }

// Receive polls at most max records (and at most MaxPollRecords), after
// first handing out records held back earlier that are now due. It blocks
// until one is available, ctx is done (ctx.Err()) or the Source is closed
// (consumer.ErrSourceClosed). Rebalances are blocked only while a poll is
// being turned into deliveries.
func (s *Source) Receive(ctx context.Context, max int) ([]consumer.Delivery, error) {
	max = min(max, s.cfg.MaxPollRecords)
	if max < 1 {
		max = 1
	}
	for {
		if s.closed.Load() {
			return nil, consumer.ErrSourceClosed
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := s.ensureTiers(ctx); err != nil {
			if cerr := ctx.Err(); cerr != nil {
				return nil, cerr // stopped while the tiers were being made
			}
			return nil, err
		}
		s.mu.Lock()
		now := time.Now()
		out := s.takeLocked(nil, max, now)
		due := s.nextDueLocked()
		wake := s.wakeCtx
		s.mu.Unlock()
		if len(out) > 0 {
			return out, nil
		}

		var pctx context.Context
		var cancel context.CancelFunc
		if due.IsZero() {
			pctx, cancel = context.WithCancel(ctx)
		} else {
			pctx, cancel = context.WithDeadline(ctx, due)
		}
		unhook := context.AfterFunc(wake, cancel)
		fs := s.cl.PollRecords(pctx, max)
		unhook()
		cancel()
		s.startTiers()
		out, err := s.absorb(fs, max)
		s.cl.AllowRebalance()
		if len(out) > 0 {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// tierStartDelay is how long after New the retry tiers' topics are fetched
// at the latest.
const tierStartDelay = FetchMaxWaitDefault

// absorb turns a poll's records into tracked entries and delivers what is
// due, up to max. It returns consumer.ErrSourceClosed when the client closed,
// ctx errors of the caller, or the first fetch error; a topic the broker no
// longer knows by its ID is followed to its new instance instead (see
// followRecreated).
func (s *Source) absorb(fs kgo.Fetches, max int) ([]consumer.Delivery, error) {
	var ferr error
	var recreated []string
	fs.EachError(func(topic string, p int32, err error) {
		switch {
		case errors.Is(err, kgo.ErrClientClosed):
			ferr = consumer.ErrSourceClosed
		case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
			// Our own wake-up or deadline; the caller's ctx is checked by
			// Receive's loop.
		case errors.Is(err, kerr.UnknownTopicID):
			if !slices.Contains(recreated, topic) {
				recreated = append(recreated, topic)
			}
		default:
			s.log.Warn("fetch error", "fetch_topic", topic, "partition", p, "error", err)
			if ferr == nil {
				ferr = fmt.Errorf("kafka: fetching %s[%d]: %w", topic, p, err)
			}
		}
	})
	s.followRecreated(recreated)
	// Records become entries before taking the lock, so settlements are not
	// held up by the conversion.
	type batch struct {
		k  tp
		es []entry
	}
	var batches []batch
	tierOf := s.tiers.Load().tierOf
	fs.EachPartition(func(ftp kgo.FetchTopicPartition) {
		if len(ftp.Records) > 0 {
			batches = append(batches, batch{tp{ftp.Topic, ftp.Partition}, s.newEntries(ftp.Records, tierOf[ftp.Topic])})
		}
	})
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		// Close ran or is running: hand out nothing it could no longer
		// release. The records are not committed, so the group's next
		// owner gets them.
		return nil, consumer.ErrSourceClosed
	}
	touched := make([]*partition, 0, len(batches))
	for _, b := range batches {
		p := s.parts[b.k]
		if p == nil {
			// The assign callback runs before fetching starts; this is a
			// safety net only.
			p = s.newPartitionLocked(b.k)
		}
		p.add(b.es)
		if !p.isHeld {
			p.isHeld = true
			s.held = append(s.held, p)
		}
		touched = append(touched, p)
	}
	out := s.takeLocked(make([]consumer.Delivery, 0, max), max, time.Now())
	for _, p := range touched {
		if !p.pausedFull && p.outstanding() >= s.cfg.MaxPartitionInFlight {
			p.pausedFull = true
			s.pauseLocked(p)
		}
	}
	return out, ferr
}

// takeLocked delivers due records of held partitions, up to max in total,
// pausing partitions whose next record is not due yet and resuming those
// that no longer wait.
func (s *Source) takeLocked(out []consumer.Delivery, max int, now time.Time) []consumer.Delivery {
	if len(s.held) == 0 {
		return out
	}
	keep := s.held[:0]
	for _, p := range s.held {
		if len(out) < max {
			out = p.take(out, max, now)
		}
		waiting := p.waitingAt(now)
		switch {
		case waiting && !p.pausedWait:
			p.pausedWait = true
			s.pauseLocked(p)
		case !waiting && p.pausedWait:
			p.pausedWait = false
			s.maybeResumeLocked(p)
		}
		if p.cursor < len(p.entries) {
			keep = append(keep, p)
		} else {
			p.isHeld = false
		}
	}
	clear(s.held[len(keep):])
	s.held = keep
	return out
}

// nextDueLocked returns the earliest time a waiting partition's next record
// is due or hops, or zero.
func (s *Source) nextDueLocked() time.Time {
	var due time.Time
	for _, p := range s.held {
		if p.cursor < len(p.entries) {
			nb := p.entries[p.cursor].dueAt()
			if !nb.IsZero() && (due.IsZero() || nb.Before(due)) {
				due = nb
			}
		}
	}
	return due
}

// wakeLocked interrupts a Receive blocked in a poll, so it sees a new due
// time or the close.
func (s *Source) wakeLocked() {
	s.wake()
	s.wakeCtx, s.wake = context.WithCancel(context.Background())
}

func (s *Source) pauseLocked(p *partition) {
	s.cl.PauseFetchPartitions(map[string][]int32{p.tp.topic: {p.tp.partition}})
}

func (s *Source) maybeResumeLocked(p *partition) {
	if p.pausedWait || p.pausedFull || !p.owned {
		return
	}
	s.cl.ResumeFetchPartitions(map[string][]int32{p.tp.topic: {p.tp.partition}})
}

func (s *Source) newPartitionLocked(k tp) *partition {
	p := &partition{
		s:         s,
		tp:        k,
		owned:     true,
		committed: -1,
		next:      -1,
	}
	p.lease, p.cancelLease = context.WithCancel(context.Background())
	s.parts[k] = p
	return p
}
