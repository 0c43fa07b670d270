package postgres

import (
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"time"
)

// Defaults applied to zero fields of Config.
const (
	SchemaDefault         = "oncely"
	RetentionDefault      = 7 * 24 * time.Hour
	PruneBatchSizeDefault = 1000
	PruneIntervalDefault  = 10 * time.Minute
	BatchLingerDefault    = 5 * time.Millisecond
	BatchTimeoutDefault   = 30 * time.Second
)

// Table is the name of the claims table inside Config.Schema. It is fixed.
const Table = "processed_messages"

// MigrationsTable is the table inside Config.Schema that records applied
// migration versions.
const MigrationsTable = "schema_migrations"

// schemaPattern is what a schema name must match: a lower-case SQL identifier
// of at most 63 bytes. Names are also quoted with pgx.Identifier.
var schemaPattern = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// Config configures a Store. The zero value is valid and means the documented
// defaults: schema "oncely", single-message mode, 7 days retention.
type Config struct {
	// Schema holds the claims table. It must match ^[a-z_][a-z0-9_]{0,62}$
	// and is quoted in every statement. Defaults to SchemaDefault ("oncely").
	Schema string

	// Retention is how long claims are kept before Prune removes them. A copy
	// of a message delivered after its claim was pruned runs the handler
	// again. Defaults to RetentionDefault (7 days).
	Retention time.Duration

	// MinRetention, when set, is the shortest Retention New accepts: the
	// longest retry delay plus the expected dead-letter replay delay. New
	// fails when Retention does not exceed it. Zero disables the check (call
	// ValidateRetention once the retry policy is known).
	MinRetention time.Duration

	// PruneBatchSize is how many claims one DELETE of Prune removes, so no
	// statement holds locks for long. Defaults to PruneBatchSizeDefault (1000).
	PruneBatchSize int

	// PruneInterval is the background pruner's period, and RunPruner's when
	// it is given zero. Defaults to PruneIntervalDefault (10m).
	PruneInterval time.Duration

	// NoPruning turns the background pruner off: claims are then deleted
	// only by Prune, RunPruner or `oncely prune`, run by you. The zero value
	// prunes: the claims table stays bounded by default.
	NoPruning bool

	// BatchSize > 1 turns on batch mode: up to BatchSize concurrent Process
	// calls share one transaction, each in its own SAVEPOINT, and return after
	// its COMMIT. Handlers then run one after another on the store's batch
	// goroutine (a transaction is not safe for concurrent use), so a batch
	// fills only when at least BatchSize deliveries are in flight: give the
	// consumer Concurrency >= BatchSize. Keep it at most 64 (see the package
	// documentation, Batch mode). 0 or 1 means single-message mode (the
	// default): one transaction per Process call.
	BatchSize int

	// BatchLinger is how long a batch waits for more deliveries after its
	// first before it runs. Defaults to BatchLingerDefault (5ms); ignored in
	// single-message mode.
	BatchLinger time.Duration

	// BatchTimeout bounds each of the store's own statements in batch mode
	// (BEGIN with the claims, a rollback to a savepoint, COMMIT), which run
	// on no caller's context; handlers' statements are bounded by their
	// callers' contexts. Defaults to BatchTimeoutDefault (30s); ignored in
	// single-message mode.
	BatchTimeout time.Duration

	// Logger receives the store's logs (pruning, batch failures). Defaults to
	// slog.Default().
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.Schema == "" {
		c.Schema = SchemaDefault
	}
	if c.Retention == 0 {
		c.Retention = RetentionDefault
	}
	if c.PruneBatchSize == 0 {
		c.PruneBatchSize = PruneBatchSizeDefault
	}
	if c.PruneInterval == 0 {
		c.PruneInterval = PruneIntervalDefault
	}
	if c.BatchSize == 0 {
		c.BatchSize = 1
	}
	if c.BatchLinger == 0 {
		c.BatchLinger = BatchLingerDefault
	}
	if c.BatchTimeout == 0 {
		c.BatchTimeout = BatchTimeoutDefault
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// validate reports every invalid field, after defaults.
func (c Config) validate() error {
	var errs []error
	if err := ValidateSchema(c.Schema); err != nil {
		errs = append(errs, err)
	}
	if c.Retention < 0 {
		errs = append(errs, fmt.Errorf("invalid Retention %s: must be > 0", c.Retention))
	}
	if c.MinRetention < 0 {
		errs = append(errs, fmt.Errorf("MinRetention must be >= 0, got %s", c.MinRetention))
	}
	if c.MinRetention > 0 && c.Retention > 0 {
		if err := checkRetention(c.Retention, c.MinRetention); err != nil {
			errs = append(errs, err)
		}
	}
	if c.PruneBatchSize < 1 {
		errs = append(errs, fmt.Errorf("PruneBatchSize must be >= 1, got %d", c.PruneBatchSize))
	}
	if c.PruneInterval < 0 {
		errs = append(errs, fmt.Errorf("PruneInterval must be > 0, got %s", c.PruneInterval))
	}
	if c.BatchSize < 1 {
		errs = append(errs, fmt.Errorf("BatchSize must be >= 1 (1 = single-message mode), got %d", c.BatchSize))
	}
	if c.BatchLinger < 0 {
		errs = append(errs, fmt.Errorf("BatchLinger must be > 0, got %s", c.BatchLinger))
	}
	if c.BatchTimeout < 0 {
		errs = append(errs, fmt.Errorf("BatchTimeout must be > 0, got %s", c.BatchTimeout))
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("postgres store: invalid config: %w", errors.Join(errs...))
}

// ValidateSchema reports whether name is accepted as Config.Schema: a
// lower-case SQL identifier (letters, digits, underscores; not starting with a
// digit) of at most 63 bytes.
func ValidateSchema(name string) error {
	if !schemaPattern.MatchString(name) {
		return fmt.Errorf("schema %q is not a valid name: it must match %s", name, schemaPattern)
	}
	return nil
}

func checkRetention(retention, longest time.Duration) error {
	if retention > longest {
		return nil
	}
	return fmt.Errorf("retention window too short: Retention (%s) must exceed the longest retry delay plus the expected dead-letter replay delay (%s), or a copy delivered after its claim is pruned runs the handler again", retention, longest)
}
