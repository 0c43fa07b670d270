package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/oncely/oncely/consumer"
)

var _ consumer.Prober = (*Store)(nil)

// errReadOnly is returned by Probe when the database refuses writes (a hot
// standby, default_transaction_read_only): no claim can be taken.
var errReadOnly = errors.New("postgres store: probe: the database is read-only")

// Probe implements consumer.Prober: it reports whether the store can serve
// any message. It fails with ErrClosed after Close; otherwise it opens a new
// session (with the pool's connection config and hooks; a pooled one only
// when the server is at its connection limit), runs one statement on it and
// closes it: it reads transaction_read_only and looks at the claims table
// without reading a row.
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
// the store. It asks on a new session, not a pooled one: during a shutdown
// (pg_ctl stop -m fast) the server refuses new sessions at once, while a
// pooled session it has not yet terminated still answers — a probe on one
// called the outage the message's fault and retried it. A server at its
// connection limit refuses the new session (53300) yet answers the pool:
// then the pooled session decides.
func (s *Store) ping(ctx context.Context) error {
	conn, err := s.connect(ctx)
	if err != nil {
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "53300" {
			return fmt.Errorf("postgres store: probe: %w", err)
		}
		return s.probeOn(ctx, s.pool)
	}
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		_ = conn.Close(closeCtx)
	}()
	return s.probeOn(ctx, conn)
}

// connect opens a session outside the pool as the pool would open one:
// with its connection config and its BeforeConnect and AfterConnect hooks.
func (s *Store) connect(ctx context.Context) (*pgx.Conn, error) {
	pc := s.pool.Config()
	cc := pc.ConnConfig
	if pc.BeforeConnect != nil {
		if err := pc.BeforeConnect(ctx, cc); err != nil {
			return nil, err
		}
	}
	conn, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		return nil, err
	}
	if pc.AfterConnect != nil {
		if err := pc.AfterConnect(ctx, conn); err != nil {
			_ = conn.Close(ctx)
			return nil, err
		}
	}
	return conn, nil
}

// probeOn runs the probe statement on q.
func (s *Store) probeOn(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}) error {
	var readOnly string
	var none bool // EXISTS over no row: always false
	if err := q.QueryRow(ctx, s.probeSQL).Scan(&readOnly, &none); err != nil {
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
