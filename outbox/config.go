package outbox

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/oncely/oncely/retry"
	"github.com/oncely/oncely/store/postgres"
)

// Defaults of Config's zero values.
const (
	BatchSizeDefault      = 500
	WorkersDefault        = 4
	PollIntervalDefault   = time.Second
	PublishTimeoutDefault = 30 * time.Second
	BackoffMinDefault     = 100 * time.Millisecond
	BackoffMaxDefault     = 30 * time.Second
	RetentionDefault      = time.Hour
	CleanupBatchDefault   = 1000
	MaintenanceDefault    = 10 * time.Second
	// RefusedMaxAttemptsDefault is Config.Refused.MaxAttempts's default.
	RefusedMaxAttemptsDefault = 10
	cleanupBatchesPerRound    = 100
)

// Config tunes a Relay. The zero value is valid: every field has a
// documented default.
type Config struct {
	// Schema holds the outbox tables (migrations 0002_outbox and
	// 0004_outbox_refused, applied by postgres.Migrate). Defaults to
	// postgres.SchemaDefault.
	Schema string

	// BatchSize is the most rows one worker claims and publishes per round
	// (one Publish call per destination). A round picks its keys among
	// those of the first Workers × BatchSize ready rows (unpublished, not of
	// a held destination nor behind a waiting refused row). Defaults to
	// BatchSizeDefault.
	BatchSize int

	// Workers is how many rounds run at once. Each claims different keys,
	// so different keys publish in parallel; each holds one pool connection
	// while it publishes. Defaults to WorkersDefault.
	Workers int

	// PollInterval is how often a worker looks for rows without being woken
	// by a notification. With NoListen it is the only wake-up, so it bounds
	// the commit-to-publish latency. Defaults to PollIntervalDefault.
	PollInterval time.Duration

	// NoListen turns LISTEN/NOTIFY off: the relay polls only. Set it where
	// notifications do not arrive, such as behind PgBouncer in transaction
	// pooling mode. Default false: a dedicated connection LISTENs on
	// Channel(Schema).
	NoListen bool

	// PublishTimeout bounds one Publish call. Defaults to
	// PublishTimeoutDefault.
	PublishTimeout time.Duration

	// BackoffMin and BackoffMax bound two jittered exponential backoffs: a
	// worker's after a round failed on the database, and each destination's
	// while none of its rows passes (a broker down, a deleted topic or
	// queue). Such a destination is held: rounds leave its rows alone until
	// its backoff ends, and every other destination keeps publishing.
	// Default BackoffMinDefault and BackoffMaxDefault.
	BackoffMin, BackoffMax time.Duration

	// Refused is the policy for a row the broker refuses (too large, say)
	// while another row of its destination passed in the same round; until
	// then an outage and a bad row look alike and no row is blamed. Each
	// refusal counts an attempt; the row then waits Refused.Delay(attempt),
	// holding only its own key (the key's later rows wait behind it, every
	// other key goes on). After Refused.MaxAttempts refusals the row moves to
	// the outbox_dead table with the broker's reason, which releases its
	// key (see DeadLetters). Zero fields take retry.Policy's defaults (1 s
	// doubling to 5 min, ±20 % jitter), except MaxAttempts:
	// RefusedMaxAttemptsDefault (10).
	Refused retry.Policy

	// Retention is how long published rows are kept before cleanup deletes
	// them. Defaults to RetentionDefault.
	Retention time.Duration

	// NoCleanup turns the deletion of published rows off (run it elsewhere
	// with Relay.Cleanup). Default false.
	NoCleanup bool

	// CleanupBatch is the most rows one cleanup DELETE removes. Defaults to
	// CleanupBatchDefault.
	CleanupBatch int

	// MaintenanceInterval is how often the relay refreshes its depth
	// metrics and deletes expired published rows. Defaults to
	// MaintenanceDefault.
	MaintenanceInterval time.Duration

	// Registerer receives the relay's metrics (see the Name constants).
	// Default nil: no metrics.
	Registerer prometheus.Registerer

	// Logger logs outages and recoveries. Defaults to slog.Default().
	Logger *slog.Logger
}

// withDefaults validates c and fills its defaults, reporting every problem
// at once.
func (c Config) withDefaults() (Config, error) {
	var errs []error
	if c.Schema == "" {
		c.Schema = postgres.SchemaDefault
	}
	if err := postgres.ValidateSchema(c.Schema); err != nil {
		errs = append(errs, err)
	}
	ints := []struct {
		name string
		v    *int
		def  int
	}{{"BatchSize", &c.BatchSize, BatchSizeDefault}, {"Workers", &c.Workers, WorkersDefault}, {"CleanupBatch", &c.CleanupBatch, CleanupBatchDefault}}
	for _, f := range ints {
		if *f.v < 0 {
			errs = append(errs, fmt.Errorf("%s must not be negative, got %d", f.name, *f.v))
		} else if *f.v == 0 {
			*f.v = f.def
		}
	}
	durs := []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{
		{"PollInterval", &c.PollInterval, PollIntervalDefault},
		{"PublishTimeout", &c.PublishTimeout, PublishTimeoutDefault},
		{"BackoffMin", &c.BackoffMin, BackoffMinDefault},
		{"BackoffMax", &c.BackoffMax, BackoffMaxDefault},
		{"Retention", &c.Retention, RetentionDefault},
		{"MaintenanceInterval", &c.MaintenanceInterval, MaintenanceDefault},
	}
	for _, f := range durs {
		if *f.v < 0 {
			errs = append(errs, fmt.Errorf("%s must not be negative, got %s", f.name, *f.v))
		} else if *f.v == 0 {
			*f.v = f.def
		}
	}
	if c.Refused.MaxAttempts == 0 {
		c.Refused.MaxAttempts = RefusedMaxAttemptsDefault
	}
	c.Refused = c.Refused.WithDefaults()
	if err := c.Refused.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("the Refused policy: %w", err))
	}
	if c.BackoffMin > c.BackoffMax {
		errs = append(errs, fmt.Errorf("BackoffMin %s exceeds BackoffMax %s", c.BackoffMin, c.BackoffMax))
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if err := errors.Join(errs...); err != nil {
		return c, fmt.Errorf("outbox: config: %w", err)
	}
	return c, nil
}
