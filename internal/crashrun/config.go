package crashrun

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// Defaults applied to zero fields of Config.
const (
	KillsDefault        = 10
	BatchDefault        = 200
	AccountsDefault     = 50
	ConcurrencyDefault  = 4
	HandlerDelayDefault = 40 * time.Millisecond
	MinKillDefault      = 300 * time.Millisecond
	MaxKillDefault      = 3 * time.Second
	RoundTimeoutDefault = 90 * time.Second
	StopTimeoutDefault  = 40 * time.Second
	TimedEveryDefault   = 4
)

// Config configures one Run. BrokerURL, DatabaseURL and Ledger are required.
type Config struct {
	// Name labels the broker in the result, e.g. "rabbitmq". Defaults to
	// the URL's scheme.
	Name string

	// BrokerURL is the broker the ledger and the harness use (not mem://).
	BrokerURL string

	// DatabaseURL is the Postgres server. Each run works in a schema of its
	// own, dropped at the end unless KeepSchema.
	DatabaseURL string

	// Ledger is the path of a built examples/ledger binary (see Build).
	Ledger string

	// Dedupe runs the ledger with -dedupe=true (the idempotency claim) or
	// false (plain at-least-once).
	Dedupe bool

	// Kills is the number of rounds, one SIGKILL each. Defaults to
	// KillsDefault (10).
	Kills int

	// Batch is the number of payments published per round. Defaults to
	// BatchDefault (200).
	Batch int

	// Accounts is the number of accounts a round's payments go to, in
	// turn. Defaults to AccountsDefault (50).
	Accounts int

	// Concurrency and HandlerDelay are the ledger's -concurrency and
	// -handler-delay: together they make a batch last a few seconds, so
	// kills land mid-stream. Default ConcurrencyDefault (4) and
	// HandlerDelayDefault (40ms).
	Concurrency  int
	HandlerDelay time.Duration

	// HandlerBatch is the ledger's -batch: with N >= 2 the ledger runs a
	// consumer.BatchHandler that applies payments N at a time with
	// set-based SQL in the idempotency claim's transaction, and waits
	// HandlerDelay once per batch (not per payment). 0, the default, and 1
	// run the per-message handler (no -batch flag is passed for 0). Not to
	// be confused with Batch, the payments published per round. A Name
	// left empty gets the suffix "-batch" when N >= 2.
	HandlerBatch int

	// Instances is the number of ledger processes each round runs, all
	// consuming as the same consumer and started together: competing
	// consumers on RabbitMQ, SQS, NATS and Redis, members of one group on
	// Kafka (with an instance_id parameter in BrokerURL, instance i gets
	// the ID "<instance_id>-i", so the static members stay distinct and a
	// restarted one takes its partitions back). Round r SIGKILLs
	// 1 + (r-1) mod Instances of them, drawn at random, at one moment,
	// and starts them again at once while the others work on. Defaults
	// to 1. A Name left empty gets the suffix "-xN" when N >= 2.
	Instances int

	// TimedEvery makes every TimedEvery-th round's kill timed: at a moment
	// drawn between MinKill and MaxKill after the round's processes
	// started, wherever the round is then (start-up included). The other
	// rounds' kills are aimed: the harness counts the round's effects
	// every 10ms and kills once a number drawn from 1 to 80 % of the
	// round's good payments have one, so an aimed kill lands mid-stream
	// on a fast machine as on a slow one (Kill.Aimed). Defaults to
	// TimedEveryDefault (4: rounds 4, 8, … are timed); 1 times every kill.
	TimedEvery int

	// MinKill and MaxKill bound the moment of a timed kill after the
	// processes' start. Default 0.3s and 3s.
	MinKill, MaxKill time.Duration

	// RoundTimeout bounds the wait for a batch's effects after the restart,
	// and the final drain. Defaults to RoundTimeoutDefault (90s).
	RoundTimeout time.Duration

	// LogDir receives the ledger's logs, one file per process. Defaults to
	// a temporary directory removed at the end.
	LogDir string

	// KeepSchema keeps the run's Postgres schema for inspection.
	KeepSchema bool

	// Progress, when set, receives one line per round.
	Progress func(format string, args ...any)

	// Rand draws the kill moments. Defaults to a random seed.
	Rand *rand.Rand

	// EndToEnd runs the whole chain: the ledger (with -relay=false) sends
	// one event per applied payment through its outbox to a destination of
	// the run's own, a separate `oncely relay` process (the Oncely binary)
	// publishes them, and a downstream consumer in the harness, with claims
	// of its own, applies each in its claim's transaction. Every round
	// SIGKILLs the relay too, most rounds while a relay round has published
	// and not marked (see RelayInMark), and the Result counts
	// events lost, applied twice and out of per-account order. Needs Dedupe.
	EndToEnd bool

	// Oncely is the path of a built cmd/oncely binary (see Build), required
	// with EndToEnd.
	Oncely string
}

func (c Config) withDefaults() Config {
	if c.Name == "" {
		if i := strings.Index(c.BrokerURL, "://"); i > 0 {
			c.Name = c.BrokerURL[:i]
		}
		if c.HandlerBatch > 1 {
			c.Name += "-batch"
		}
		if c.Instances > 1 {
			c.Name += fmt.Sprintf("-x%d", c.Instances)
		}
	}
	if c.Instances == 0 {
		c.Instances = 1
	}
	if c.TimedEvery == 0 {
		c.TimedEvery = TimedEveryDefault
	}
	if c.Kills == 0 {
		c.Kills = KillsDefault
	}
	if c.Batch == 0 {
		c.Batch = BatchDefault
	}
	if c.Accounts == 0 {
		c.Accounts = AccountsDefault
	}
	if c.Concurrency == 0 {
		c.Concurrency = ConcurrencyDefault
	}
	if c.HandlerDelay == 0 {
		c.HandlerDelay = HandlerDelayDefault
	}
	if c.MinKill == 0 {
		c.MinKill = MinKillDefault
	}
	if c.MaxKill == 0 {
		c.MaxKill = MaxKillDefault
	}
	if c.RoundTimeout == 0 {
		c.RoundTimeout = RoundTimeoutDefault
	}
	if c.Progress == nil {
		c.Progress = func(string, ...any) {}
	}
	if c.Rand == nil {
		c.Rand = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	return c
}

func (c Config) validate() error {
	var errs []error
	if c.BrokerURL == "" {
		errs = append(errs, errors.New("BrokerURL is required"))
	} else if strings.HasPrefix(c.BrokerURL, "mem:") {
		errs = append(errs, errors.New("mem:// lives inside the ledger process and dies with it; crash-test rabbitmq, kafka, sqs or redis"))
	}
	if c.DatabaseURL == "" {
		errs = append(errs, errors.New("DatabaseURL is required"))
	}
	if c.Ledger == "" {
		errs = append(errs, errors.New("the Ledger field (the built examples/ledger binary) is required; see Build"))
	}
	if c.Kills < 1 || c.Batch < 1 || c.Concurrency < 1 || c.Accounts < 1 {
		errs = append(errs, fmt.Errorf("the Kills, Batch, Concurrency and Accounts fields must be >= 1, got %d, %d, %d, %d", c.Kills, c.Batch, c.Concurrency, c.Accounts))
	}
	if c.Instances < 1 || c.TimedEvery < 1 {
		errs = append(errs, fmt.Errorf("the Instances and TimedEvery fields must be >= 0 (0: the default), got %d and %d", c.Instances, c.TimedEvery))
	}
	if c.HandlerBatch < 0 {
		errs = append(errs, fmt.Errorf("the HandlerBatch field must be >= 0, got %d", c.HandlerBatch))
	}
	if c.HandlerBatch > 1 && !c.Dedupe {
		errs = append(errs, errors.New("the HandlerBatch field needs Dedupe: the ledger applies batches in the idempotency claim's transaction"))
	}
	if c.EndToEnd && c.Oncely == "" {
		errs = append(errs, errors.New("the EndToEnd field needs the Oncely field (the built cmd/oncely binary, which runs the relay); see Build"))
	}
	if c.EndToEnd && !c.Dedupe {
		errs = append(errs, errors.New("the EndToEnd field needs Dedupe: exactly one event per payment needs the ledger's claims"))
	}
	if c.MinKill < 0 || c.MaxKill < c.MinKill {
		errs = append(errs, fmt.Errorf("want 0 <= MinKill <= MaxKill, got %s and %s", c.MinKill, c.MaxKill))
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("crashtest: invalid config: %w", errors.Join(errs...))
}
