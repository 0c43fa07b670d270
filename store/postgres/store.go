package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store"
)

// Store claims message IDs in <schema>.processed_messages inside the
// handler's transaction. It implements store.Store and is safe for concurrent
// use. Create it with New; call Close when done (it stops the background
// pruner and drains batch mode).
type Store struct {
	pool         *pgxpool.Pool
	cfg          Config
	claimSQL     string
	bulkClaimSQL string
	// batchClaimSQL claims a batch of IDs of one consumer (ProcessBatch).
	batchClaimSQL string
	deleteSQL     string
	probeSQL      string
	table         string

	stopPruner context.CancelFunc // nil with Config.NoPruning
	prunerDone chan struct{}

	batch *batcher // nil in single-message mode

	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error
}

var _ store.Store = (*Store)(nil)

// New returns a Store that uses pool, after validating cfg (every problem is
// reported at once). It does not touch the database: run Migrate first. The
// Store does not own pool; close the pool after the Store.
//
// Unless Config.NoPruning is set, New starts the background pruner: every
// Config.PruneInterval (10m) it deletes the claims older than
// Config.Retention (7 days), as Prune does, logging failures and carrying on,
// so the claims table stays bounded without an operator. Close stops it.
func New(pool *pgxpool.Pool, cfg Config) (*Store, error) {
	if pool == nil {
		return nil, errors.New("postgres store: nil pool")
	}
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	table := pgx.Identifier{cfg.Schema, Table}.Sanitize()
	s := &Store{
		pool:     pool,
		cfg:      cfg,
		table:    table,
		claimSQL: "INSERT INTO " + table + " (consumer, message_id) VALUES ($1, $2) ON CONFLICT DO NOTHING",
		bulkClaimSQL: "INSERT INTO " + table + " (consumer, message_id) SELECT * FROM unnest($1::text[], $2::text[])" +
			" ON CONFLICT DO NOTHING RETURNING consumer, message_id",
		batchClaimSQL: "INSERT INTO " + table + " (consumer, message_id) SELECT $1, unnest($2::text[])" +
			" ON CONFLICT DO NOTHING RETURNING message_id",
		deleteSQL: "DELETE FROM " + table + " WHERE consumer = $1 AND message_id = $2",
		probeSQL:  "SELECT pg_catalog.current_setting('transaction_read_only'), EXISTS (SELECT FROM " + table + " WHERE false)",
	}
	if cfg.BatchSize > 1 {
		s.batch = newBatcher(s)
	}
	if !cfg.NoPruning {
		ctx, cancel := context.WithCancel(context.Background())
		s.stopPruner, s.prunerDone = cancel, make(chan struct{})
		go func() {
			defer close(s.prunerDone)
			s.prunePeriodically(ctx)
		}()
	}
	return s, nil
}

// Config returns the store's configuration with defaults applied.
func (s *Store) Config() Config { return s.cfg }

// ValidateRetention reports an error when Config.Retention does not exceed
// longest, the longest retry delay plus the expected dead-letter replay delay
// (for example retry.Policy.LongestDelay() plus a day): a copy delivered after
// its claim was pruned would run the handler again.
func (s *Store) ValidateRetention(longest time.Duration) error {
	if err := checkRetention(s.cfg.Retention, longest); err != nil {
		return fmt.Errorf("postgres store: %w", err)
	}
	return nil
}

// Process implements store.Store: it claims (consumerName, messageID) and runs
// fn in the claim's transaction, reachable from fn's context with Tx. See the
// package documentation for the protocol and for which errors are wrapped with
// consumer.UnavailableFrom (naming the Store as the dependency to probe) and
// which are the message's own. An empty consumer name or message ID, or an ID
// over store.MaxMessageIDLength bytes, is rejected with a consumer.Permanent
// error. In batch mode the call returns after its batch's COMMIT.
func (s *Store) Process(ctx context.Context, consumerName, messageID string, fn func(ctx context.Context) error) (bool, error) {
	if err := checkKey(consumerName, messageID); err != nil {
		return false, consumer.Permanent(err)
	}
	if s.closed.Load() {
		return false, consumer.UnavailableFrom(ErrClosed, s)
	}
	if s.batch != nil {
		return s.batch.process(ctx, consumerName, messageID, fn)
	}
	return s.processOne(ctx, consumerName, messageID, fn)
}

func checkKey(consumerName, messageID string) error {
	switch {
	case consumerName == "":
		return errors.New("postgres store: empty consumer name")
	case messageID == "":
		return errors.New("postgres store: message has no ID")
	case len(messageID) > store.MaxMessageIDLength:
		return fmt.Errorf("postgres store: message ID is %d bytes, over the %d-byte limit", len(messageID), store.MaxMessageIDLength)
	}
	return nil
}

func (s *Store) processOne(ctx context.Context, consumerName, messageID string, fn func(ctx context.Context) error) (duplicate bool, err error) {
	tx, tag, err := s.beginExec(ctx, s.claimSQL, consumerName, messageID)
	if err != nil {
		return false, s.storeError("begin and claim", err)
	}
	done := false
	defer func() {
		if !done { // fn panicked: release the connection, then let the panic go on
			_ = tx.Rollback(context.WithoutCancel(ctx))
		}
	}()
	if tag.RowsAffected() == 0 {
		done = true
		if err := tx.Commit(ctx); err != nil {
			return false, s.unavailable("commit duplicate", err)
		}
		return true, nil
	}
	ferr := fn(withTx(ctx, handlerTx{tx}))
	done = true
	return false, s.settleTx(ctx, tx, ferr)
}

// settleTx ends tx after its handler returned ferr: COMMIT when it returned
// nil and no statement of tx failed, else ROLLBACK. It returns the error for
// the caller, as the package doc's rule says (handlerError, commitError).
func (s *Store) settleTx(ctx context.Context, tx pgx.Tx, ferr error) error {
	if ferr == nil && tx.Conn().PgConn().TxStatus() == txStatusFailed {
		ferr = errAborted
	}
	if ferr != nil {
		lost := tx.Conn().IsClosed() // before Rollback hands the connection back to the pool
		_ = tx.Rollback(context.WithoutCancel(ctx))
		return s.handlerError(ferr, lost)
	}
	if err := tx.Commit(ctx); err != nil {
		return s.commitError(err)
	}
	return nil
}

// beginExec begins a transaction on a pooled connection and runs sql in it,
// in one round trip (pgx.Batch.BeginTx). On error the transaction is rolled
// back and its connection released.
func (s *Store) beginExec(ctx context.Context, sql string, args ...any) (pgx.Tx, pgconn.CommandTag, error) {
	var b pgx.Batch
	b.BeginTx(pgx.TxOptions{})
	b.Queue(sql, args...)
	br := s.pool.SendBatch(ctx, &b)
	tx := br.Tx()
	_, err := br.Exec()
	var tag pgconn.CommandTag
	if err == nil {
		tag, err = br.Exec()
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = tx.Rollback(context.WithoutCancel(ctx))
		return nil, tag, err
	}
	return tx, tag, nil
}

// Close stops the background pruner and batch mode: Process calls after Close fail with ErrClosed
// (wrapped with consumer.UnavailableFrom; Probe then fails too), and deliveries already queued are run
// and committed before Close returns, or until ctx is done. In single-message
// mode Close only refuses new calls. It does not close the pool. Close is
// idempotent.
func (s *Store) Close(ctx context.Context) error {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		if s.stopPruner != nil {
			s.stopPruner()
			<-s.prunerDone
		}
		if s.batch != nil {
			s.closeErr = s.batch.close(ctx)
		}
	})
	return s.closeErr
}

// commitError classifies a failed COMMIT of a handler's transaction. When the
// server definitely rejected it because of the handler's work (a deferred
// constraint, a serialization failure), nothing committed and the error is
// returned as the handler's (retryable). Otherwise the outcome is unknown or
// the database is unreachable: wrapped with consumer.UnavailableFrom (the
// runtime probes the database), and the claim decides the rerun. Either way a
// failed COMMIT is never reported as success.
func (s *Store) commitError(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && !IsConnectionError(err) {
		return fmt.Errorf("postgres store: commit rejected: %w", err)
	}
	return s.unavailable("commit", err)
}
