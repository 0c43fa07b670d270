package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/oncely/oncely/consumer"
)

var _ consumer.Prober = (*Store)(nil)

// errReadOnly is returned by Probe when the database refuses writes (a hot
// standby, default_transaction_read_only): no claim can be taken.
var errReadOnly = errors.New("postgres store: probe: the database is read-only")

// Probe implements consumer.Prober: it reports whether the store can serve
// any message. It fails with ErrClosed after Close; otherwise it runs one
// statement on a pooled connection that is not the one that failed (the
// failed one is closed, or is back in the pool after its rollback; pgxpool
// pings a connection idle for over a second before handing it out): it reads
// transaction_read_only and looks at the claims table without reading a row.
// So Probe fails when the database cannot be reached, when it is read-only,
// and when the claims table is missing or not readable — failures the runtime
// must treat as an outage rather than as the message's fault. It reads no
// message and honours ctx (the runtime bounds it with Config.ProbeTimeout).
//
// Errors the store wraps with consumer.UnavailableFrom name the Store as
// their Dependency, so the runtime probes it before calling them an outage:
// when Probe succeeds, the failure is the message's (retried, then
// dead-lettered). A condition the server hides from a read, such as a full
// disk, passes the probe.
func (s *Store) Probe(ctx context.Context) error {
	if s.closed.Load() {
		return ErrClosed
	}
	return s.ping(ctx)
}

// ping is Probe without the closed check: whether the database can serve
// the store.
func (s *Store) ping(ctx context.Context) error {
	var readOnly string
	var none bool // EXISTS over no row: always false
	if err := s.pool.QueryRow(ctx, s.probeSQL).Scan(&readOnly, &none); err != nil {
		var pgErr *pgconn.PgError
		// 42P01 undefined table, 3F000 invalid schema name.
		if errors.As(err, &pgErr) && (pgErr.Code == "42P01" || pgErr.Code == "3F000") {
			return fmt.Errorf("%w: run `oncely migrate --schema %s`: %w", ErrNotMigrated, s.cfg.Schema, err)
		}
		return fmt.Errorf("postgres store: probe: %w", err)
	}
	if readOnly != "off" {
		return errReadOnly
	}
	return nil
}
