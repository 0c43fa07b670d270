package consumer

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/oncely/oncely/retry"
)

// Defaults applied to zero fields of Config.
const (
	ConcurrencyDefault      = 16
	MaxIDLengthDefault      = 256
	SoftStopTimeoutDefault  = 30 * time.Second
	HardStopTimeoutDefault  = 10 * time.Second
	SettleTimeoutDefault    = 30 * time.Second
	BreakerThresholdDefault = 5
	ProbeTimeoutDefault     = 5 * time.Second
	BatchSizeDefault        = 100
	BatchMaxWaitDefault     = 5 * time.Millisecond
)

// Ordering chooses which deliveries must be handled one after another.
type Ordering int

const (
	// OrderByKey (the default) runs deliveries with the same Message.Key one at
	// a time in arrival order; different keys run in parallel. Messages with an
	// empty key are ordered per partition (or per source when unpartitioned).
	OrderByKey Ordering = iota
	// OrderByPartition keeps one lane per partition (strict partition order).
	OrderByPartition
	// Unordered runs every delivery independently.
	Unordered
)

// String names the ordering.
func (o Ordering) String() string {
	switch o {
	case OrderByKey:
		return "key"
	case OrderByPartition:
		return "partition"
	case Unordered:
		return "unordered"
	}
	return fmt.Sprintf("Ordering(%d)", int(o))
}

// Config configures a Consumer. The zero value of every field but Name is
// valid and means the documented default.
type Config struct {
	// Name identifies the consumer (the "ledger" in "ledger consumes
	// payments"). Required. Idempotency claims, retry and dead-letter
	// destinations are keyed by it, so two consumers of one source keep
	// separate claims.
	Name string

	// Concurrency is the most handlers running at once. Defaults to
	// ConcurrencyDefault (16). Worker goroutines start only as work finds
	// no idle one, so handlers that keep up on fewer never start the rest.
	// While handlers are fast, a worker may run several received
	// deliveries itself before others wake; a handler that turns slow
	// hands the deliveries its worker has not started to idle workers, so
	// a slow delivery delays only a few others queued with it, never its
	// key's lane beyond its own turn.
	Concurrency int

	// MaxInFlight bounds the deliveries received but not yet settled,
	// including those queued behind their key's lane. When it is reached the
	// runtime stops calling Source.Receive (backpressure). Defaults to
	// 8 × Concurrency, and with a BatchHandler to the larger of that and
	// 4 × BatchSize; raised to the Source's Capabilities().Prefetch when
	// that is larger (a MaxInFlight set below it is refused).
	MaxInFlight int

	// ReceiveBatch is the most deliveries asked of one Source.Receive call.
	// Defaults to MaxInFlight.
	ReceiveBatch int

	// Ordering chooses the lanes. Defaults to OrderByKey.
	Ordering Ordering

	// BatchSize is the most messages in one batch, with a BatchHandler (it
	// is ignored otherwise). Concurrency then bounds the batches running at
	// once. A batch holds each key's messages in arrival order, and a
	// message whose key is in a running batch waits for that batch to end,
	// so two batches running at once never share a key (see Ordering).
	// Batches fill best when Concurrency × BatchSize is at most MaxInFlight
	// and keys far outnumber a batch's messages: a full window with every
	// key busy starts the batches it can, however small. Defaults to
	// BatchSizeDefault (100).
	BatchSize int

	// BatchMaxWait is how long, with a BatchHandler, a batch that is not
	// full waits for more messages after its oldest one could have run. A
	// batch starts at once when it is full, when no more messages can be
	// received until a batch runs (the window, MaxInFlight, is full, or
	// nearly: once intake has filled it, it waits for a few slots to free),
	// or when the consumer stops. Defaults to BatchMaxWaitDefault (5ms).
	BatchMaxWait time.Duration

	// Retry is the broker-side retry policy: attempts and backoff between
	// them. The zero value uses retry's defaults (5 attempts, 1s doubling to
	// 5m, ±20 % jitter).
	Retry retry.Policy

	// Classify decides how a failure is settled. Defaults to the package's
	// Classify (Permanent → dead-letter, Unavailable → outage, else retry).
	// A custom func can delegate to Classify for errors it does not know.
	Classify func(error) Class

	// MaxIDLength is the longest accepted message ID in bytes; longer IDs are
	// dead-lettered with reason invalid-id. Defaults to MaxIDLengthDefault
	// (256), the limit of the Postgres store's claim column.
	MaxIDLength int

	// SoftStopTimeout is how long a stop waits for in-flight handlers before
	// cancelling their contexts (the hard stop). Defaults to
	// SoftStopTimeoutDefault (30s).
	SoftStopTimeout time.Duration

	// HardStopTimeout is how long, after cancelling handler contexts, a stop
	// waits for handlers to return before closing the source anyway. Defaults
	// to HardStopTimeoutDefault (10s).
	HardStopTimeout time.Duration

	// SettleTimeout bounds one settlement call (ack, retry or dead-letter
	// publish). A failed settlement is tried again with backoff. Defaults to
	// SettleTimeoutDefault (30s).
	SettleTimeout time.Duration

	// BreakerThreshold is the number of consecutive outage failures
	// (Unavailable errors or failed settlements whose dependency does not
	// answer its probe) that pause intake until an attempt succeeds again
	// or, while it is open, a probe of that dependency answers. Defaults to
	// BreakerThresholdDefault (5).
	BreakerThreshold int

	// ProbeTimeout bounds one probe of a dependency (see Prober): a probe
	// that has not answered by then counts as "down". Defaults to
	// ProbeTimeoutDefault (5s).
	ProbeTimeout time.Duration

	// OutageBackoff spaces the attempts at a delivery held by an outage, the
	// Receive calls after a failed one, and the breaker's probes while it is
	// open. No wait exceeds MaxInterval: jitter spreads the waits at the cap
	// below it, never above. So once the dependency that opened the breaker
	// answers again, intake resumes within MaxInterval + ProbeTimeout (a
	// probe under way when it comes back may still fail after ProbeTimeout;
	// the next starts within MaxInterval), plus the round trip of the probe
	// that finds it up. The zero value backs off from 100ms to 30s with
	// jitter; MaxAttempts is ignored (held deliveries are tried until they
	// succeed or the consumer stops).
	OutageBackoff retry.Policy

	// Logger receives the runtime's logs. Defaults to slog.Default().
	Logger *slog.Logger

	// Observer receives settlement events. Defaults to none.
	Observer Observer

	// Duplicates, set to AllowDuplicates(reason), lets New accept a handler
	// chain without an idempotency middleware; New logs it at Info and
	// Consumer.Duplicates reports it. The zero value (the default) allows
	// none: New returns ErrNoIdempotency for a handler without middleware,
	// and a message whose handler returns nil without passing through a
	// claim is dead-lettered with reason ReasonNoClaim (see MarkClaimed).
	Duplicates Duplicates
}

// withDefaults returns c with its zero fields defaulted, for a Consumer of
// a BatchHandler when batch is set, on a Source of the given prefetch
// (Capabilities().Prefetch).
func (c Config) withDefaults(batch bool, prefetch int) Config {
	if c.Concurrency == 0 {
		c.Concurrency = ConcurrencyDefault
	}
	if c.BatchSize == 0 {
		c.BatchSize = BatchSizeDefault
	}
	if c.BatchMaxWait == 0 {
		c.BatchMaxWait = BatchMaxWaitDefault
	}
	if c.MaxInFlight == 0 {
		c.MaxInFlight = 8 * c.Concurrency
		if batch {
			c.MaxInFlight = max(c.MaxInFlight, 4*c.BatchSize)
		}
		c.MaxInFlight = max(c.MaxInFlight, prefetch)
	}
	if c.ReceiveBatch == 0 {
		c.ReceiveBatch = c.MaxInFlight
	}
	if c.Classify == nil {
		c.Classify = Classify
	}
	if c.MaxIDLength == 0 {
		c.MaxIDLength = MaxIDLengthDefault
	}
	if c.SoftStopTimeout == 0 {
		c.SoftStopTimeout = SoftStopTimeoutDefault
	}
	if c.HardStopTimeout == 0 {
		c.HardStopTimeout = HardStopTimeoutDefault
	}
	if c.SettleTimeout == 0 {
		c.SettleTimeout = SettleTimeoutDefault
	}
	if c.BreakerThreshold == 0 {
		c.BreakerThreshold = BreakerThresholdDefault
	}
	if c.ProbeTimeout == 0 {
		c.ProbeTimeout = ProbeTimeoutDefault
	}
	if c.OutageBackoff.InitialInterval == 0 {
		c.OutageBackoff.InitialInterval = 100 * time.Millisecond
	}
	if c.OutageBackoff.MaxInterval == 0 {
		c.OutageBackoff.MaxInterval = 30 * time.Second
	}
	c.OutageBackoff.MaxAttempts = 1 << 30
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// validate reports every invalid field of c for src, after defaults; batch
// is set for a Consumer of a BatchHandler.
func (c Config) validate(src Source, caps Capabilities, batch bool) error {
	var errs []error
	if n, ok := src.(ConsumerNamer); ok && c.Name != "" && n.ConsumerName() != c.Name {
		errs = append(errs, fmt.Errorf("config.Name is %q but the Source was opened for consumer %q: claims and dead letters would live under different names; use one name for both", c.Name, n.ConsumerName()))
	}
	if c.Name == "" {
		errs = append(errs, errors.New("config.Name is required (it keys idempotency claims and retry/DLQ destinations)"))
	} else if _, err := checkID(c.Name, MaxIDLengthDefault); err != nil {
		errs = append(errs, fmt.Errorf("config.Name keys idempotency claims, so it follows the message ID rules: %w", err))
	}
	positive := func(name string, v int) {
		if v < 1 {
			errs = append(errs, fmt.Errorf("%s must be >= 1, got %d", name, v))
		}
	}
	positive("Concurrency", c.Concurrency)
	positive("MaxInFlight", c.MaxInFlight)
	positive("ReceiveBatch", c.ReceiveBatch)
	positive("MaxIDLength", c.MaxIDLength)
	positive("BreakerThreshold", c.BreakerThreshold)
	positive("BatchSize", c.BatchSize)
	if c.MaxInFlight > 0 && c.MaxInFlight < c.Concurrency {
		errs = append(errs, fmt.Errorf("MaxInFlight (%d) must be >= Concurrency (%d), or workers sit idle", c.MaxInFlight, c.Concurrency))
	}
	if c.ReceiveBatch > c.MaxInFlight && c.MaxInFlight > 0 {
		errs = append(errs, fmt.Errorf("ReceiveBatch (%d) must be <= MaxInFlight (%d)", c.ReceiveBatch, c.MaxInFlight))
	}
	if c.Ordering < OrderByKey || c.Ordering > Unordered {
		errs = append(errs, fmt.Errorf("unknown Ordering %d", int(c.Ordering)))
	}
	if c.Ordering == OrderByPartition && !caps.Partitioned {
		errs = append(errs, fmt.Errorf("OrderByPartition needs a partitioned broker; %s has no partitions (use OrderByKey)", caps.Broker))
	}
	for name, d := range map[string]time.Duration{"BatchMaxWait": c.BatchMaxWait, "SoftStopTimeout": c.SoftStopTimeout, "HardStopTimeout": c.HardStopTimeout, "SettleTimeout": c.SettleTimeout, "ProbeTimeout": c.ProbeTimeout} {
		if d < 0 {
			errs = append(errs, fmt.Errorf("%s must be > 0, got %s", name, d))
		}
	}
	if err := c.Retry.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := c.OutageBackoff.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("OutageBackoff: %w", err))
	}
	if caps.Prefetch > 0 && c.MaxInFlight > 0 && c.MaxInFlight < caps.Prefetch {
		errs = append(errs, fmt.Errorf("MaxInFlight (%d) is below %s's prefetch (%d): lower the source's prefetch or raise MaxInFlight", c.MaxInFlight, caps.Broker, caps.Prefetch))
	}
	if batch && caps.Prefetch > 0 && c.BatchSize > caps.Prefetch {
		errs = append(errs, fmt.Errorf("BatchSize (%d) is above %s's prefetch (%d): the broker never sends a full batch, so every batch would wait BatchMaxWait; raise the source's prefetch or lower BatchSize", c.BatchSize, caps.Broker, caps.Prefetch))
	}
	if batch && c.MaxInFlight < c.BatchSize {
		errs = append(errs, fmt.Errorf("MaxInFlight (%d) is below BatchSize (%d): no batch could fill; raise MaxInFlight", c.MaxInFlight, c.BatchSize))
	}
	if caps.MaxDelay > 0 && c.Retry.LongestDelay() > caps.MaxDelay {
		errs = append(errs, fmt.Errorf("the Retry policy can delay up to %s but %s supports at most %s; lower Retry.MaxInterval", c.Retry.LongestDelay(), caps.Broker, caps.MaxDelay))
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("oncely: invalid consumer config: %w", errors.Join(errs...))
}
