package postgres

import (
	"context"
	"errors"
	"fmt"
)

// ErrNotMigrated is wrapped by Check when the store's schema lacks
// migrations this build needs.
var ErrNotMigrated = errors.New("postgres store: schema not migrated")

// Check verifies at start-up that the store can serve messages: the database
// answers, is writable, and the schema is migrated to this build's version.
// Call it once after New, before the consumer runs, so a missing migration
// fails at once with the fix in the message ("run `oncely migrate`")
// instead of holding every message as an outage. It honours ctx: an
// unreachable database fails when ctx is done, not never.
func (s *Store) Check(ctx context.Context) error {
	ms, err := Migrations()
	if err != nil {
		return err
	}
	v, err := Version(ctx, s.pool, s.cfg.Schema)
	if err != nil {
		return fmt.Errorf("postgres store: check: is the database reachable? %w", err)
	}
	if v < len(ms) {
		return fmt.Errorf("%w: %s is at version %d, this build needs %d: run `oncely migrate --schema %s` (or postgres.Migrate) first",
			ErrNotMigrated, s.cfg.Schema, v, len(ms), s.cfg.Schema)
	}
	if v > len(ms) {
		return fmt.Errorf("postgres store: check: schema %s is at version %d, newer than this build knows (%d): upgrade oncely", s.cfg.Schema, v, len(ms))
	}
	return s.ping(ctx)
}
