package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/outbox"
	"github.com/oncely/oncely/retry"
	"github.com/oncely/oncely/store/postgres"
)

// consumerName is the consumer the ledger runs as unless -consumer says
// otherwise; the source is -source (default "payments"). Only BROKER_URL
// changes between brokers.
const consumerName = "ledger"

// tablesSQL creates the ledger's tables when absent. ledger_entries has no
// unique constraint on message_id on purpose: a duplicate effect shows as a
// second row. ledger_accounts.applied counts the account's applied payments:
// the seq of its ledger.applied events. A table of an older version gets the
// column, counted from its entries; only then, as ALTER TABLE locks the
// table out even when it has nothing to do.
const tablesSQL = `
CREATE TABLE IF NOT EXISTS ledger_accounts (
	account       text PRIMARY KEY,
	balance_cents bigint NOT NULL DEFAULT 0,
	applied       bigint NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS ledger_entries (
	id           bigserial PRIMARY KEY,
	message_id   text NOT NULL,
	account      text NOT NULL,
	amount_cents bigint NOT NULL,
	created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS ledger_entries_message_id ON ledger_entries (message_id);
DO $$ BEGIN
	IF NOT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = 'ledger_accounts'::regclass AND attname = 'applied' AND NOT attisdropped) THEN
		ALTER TABLE ledger_accounts ADD COLUMN applied bigint NOT NULL DEFAULT 0;
		UPDATE ledger_accounts a SET applied = (SELECT count(*) FROM ledger_entries e WHERE e.account = a.account);
	END IF;
END $$;
`

// payment is a message body.
type payment struct {
	Account     string `json:"account"`
	AmountCents int64  `json:"amount_cents"`
}

// poisonAccount makes the handler fail every time.
const poisonAccount = "poison"

// handler applies payments in the idempotency claim's transaction
// (postgres.Tx): the -dedupe=true handler.
type handler struct {
	delay  time.Duration
	events *events
}

// Handle decodes and applies one payment in the claim's transaction.
func (h *handler) Handle(ctx context.Context, msg *consumer.Message) error {
	p, err := decode(ctx, msg, h.delay)
	if err != nil {
		return err
	}
	tx, ok := postgres.Tx(ctx)
	if !ok {
		return errors.New("no claim transaction in the context: the idempotency middleware is missing")
	}
	return apply(outbox.WithCause(ctx, msg), tx, msg.ID, p, h.events)
}

// plainHandler applies payments in a transaction of its own, through the
// pool: the -dedupe=false handler, plain at-least-once (a redelivered
// payment is applied again).
type plainHandler struct {
	pool   *pgxpool.Pool
	delay  time.Duration
	events *events
}

// Handle decodes and applies one payment in its own transaction.
func (h *plainHandler) Handle(ctx context.Context, msg *consumer.Message) error {
	p, err := decode(ctx, msg, h.delay)
	if err != nil {
		return err
	}
	ctx = outbox.WithCause(ctx, msg)
	return pgx.BeginFunc(ctx, h.pool, func(tx pgx.Tx) error { return apply(ctx, tx, msg.ID, p, h.events) })
}

// decode decodes msg's payment, refuses the poison account and waits delay
// (the simulated work).
func decode(ctx context.Context, msg *consumer.Message, delay time.Duration) (payment, error) {
	p, err := parse(msg)
	if err != nil {
		return p, err
	}
	return p, wait(ctx, delay)
}

// apply is the effect: the balance, one ledger entry and the ledger.applied
// event (ev nil: none), whose seq the balance's statement returns: the
// account's row lock, held to commit, makes seqs follow commit order.
func apply(ctx context.Context, tx pgx.Tx, id string, p payment, ev *events) error {
	var seq int64
	if err := tx.QueryRow(ctx, `INSERT INTO ledger_accounts (account, balance_cents, applied) VALUES ($1, $2, 1)
		ON CONFLICT (account) DO UPDATE SET balance_cents = ledger_accounts.balance_cents + EXCLUDED.balance_cents,
			applied = ledger_accounts.applied + 1
		RETURNING applied`,
		p.Account, p.AmountCents).Scan(&seq); err != nil {
		return fmt.Errorf("updating account %s: %w", p.Account, err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO ledger_entries (message_id, account, amount_cents) VALUES ($1, $2, $3)`,
		id, p.Account, p.AmountCents); err != nil {
		return fmt.Errorf("inserting ledger entry: %w", err)
	}
	return ev.send(ctx, tx, id, p, seq)
}

// serve runs the ledger until ctx is done, then drains.
func serve(ctx context.Context, cfg config, log *slog.Logger) error {
	pool, err := pgxpool.New(ctx, cfg.databaseURL)
	if err != nil {
		return fmt.Errorf("DATABASE_URL: %w", err)
	}
	defer pool.Close()
	if err := createTables(ctx, pool); err != nil {
		return fmt.Errorf("creating the ledger tables: %w", err)
	}

	var (
		mws []consumer.Middleware
		st  *postgres.Store
	)
	ev, err := newEvents(cfg)
	if err != nil {
		return err
	}
	if cfg.dedupe || ev != nil {
		// The claims' table and the outbox's (0002_outbox).
		if err := postgres.Migrate(ctx, pool, cfg.schema); err != nil {
			return fmt.Errorf("migrating the oncely store: %w", err)
		}
	}
	if !cfg.dedupe && ev != nil {
		if err := checkMigrated(ctx, pool, cfg.schema); err != nil {
			return err
		}
	}
	if cfg.dedupe {
		st, err = postgres.New(pool, postgres.Config{Schema: cfg.schema, Logger: log})
		if err != nil {
			return err
		}
		defer st.Close(context.WithoutCancel(ctx)) // stops its background pruner
		if err := st.Check(ctx); err != nil {
			return err
		}
		mws = append(mws, middleware.Idempotency(st))
	}
	var h consumer.Handler = &handler{delay: cfg.handlerDelay, events: ev}
	switch {
	case !cfg.dedupe:
		h = &plainHandler{pool: pool, delay: cfg.handlerDelay, events: ev}
	case cfg.batch > 1:
		h = postgres.BatchHandlerFunc((&batchHandler{delay: cfg.handlerDelay, events: ev}).HandleBatch)
	}

	broker, err := adapters.Open(ctx, prefetchFor(cfg.brokerURL, cfg.batch), adapters.WithLogger(log))
	if err != nil {
		return err
	}
	defer broker.Close()
	src, err := broker.Source(ctx, cfg.source, cfg.consumer)
	if err != nil {
		return err
	}

	ccfg := consumer.Config{
		Name:        cfg.consumer,
		Concurrency: cfg.concurrency,
		// The runtime's window must hold what the broker pushes ahead (the
		// RabbitMQ prefetch, 128 by default): the default 8 × Concurrency
		// is smaller below a Concurrency of 16.
		MaxInFlight: max(8*cfg.concurrency, src.Capabilities().Prefetch),
		Retry: retry.Policy{
			MaxAttempts:     cfg.maxAttempts,
			InitialInterval: cfg.retryDelay,
			MaxInterval:     10 * cfg.retryDelay,
		},
		SoftStopTimeout: 20 * time.Second,
		Logger:          log,
	}
	if cfg.batch > 1 {
		ccfg.BatchSize = cfg.batch
		ccfg.MaxInFlight = max(ccfg.MaxInFlight, 4*cfg.batch)
	}
	if !cfg.dedupe {
		// -dedupe=false is the crash test's control group: it must show
		// the duplicates that at-least-once delivery produces.
		ccfg.Duplicates = consumer.AllowDuplicates("-dedupe=false: plain at-least-once, to measure duplicates (crash test control)")
	}
	if st != nil {
		// A copy delivered after its claim was pruned would run the handler
		// again: claims must outlive the longest retry, as the broker waits
		// it, plus a day to replay dead letters.
		longest := ccfg.Retry.LongestDelay()
		if caps := src.Capabilities(); caps.RetryDelay != nil {
			longest = caps.RetryDelay(longest, 0)
		}
		if err := st.ValidateRetention(longest + 24*time.Hour); err != nil {
			_ = src.Close(ctx)
			return err
		}
	}
	var obs *observability
	if cfg.addr != "" {
		obs, err = newObservability(cfg.addr, cfg.consumer, log)
		if err != nil {
			_ = src.Close(ctx)
			return err
		}
		ccfg.Observer = obs.observer()
		mws = append([]consumer.Middleware{obs.middleware()}, mws...)
	}
	c, err := consumer.New(src, h, ccfg, mws...)
	if err != nil {
		_ = src.Close(ctx)
		return err
	}
	if obs != nil {
		stopObs, err := obs.start(ctx, c, src)
		if err != nil {
			_ = src.Close(ctx)
			return err // the ops address is taken: fail at start, not without health endpoints
		}
		defer stopObs()
	}
	// The relay stops after the consumer drained (the last payments' events
	// go out first); a relay that fails stops the consumer and the ledger.
	runCtx, stopRun := context.WithCancelCause(ctx)
	defer stopRun(nil)
	var rr *relayRunner
	if ev != nil && cfg.relay {
		var reg prometheus.Registerer
		if obs != nil {
			reg = obs.reg
		}
		r, err := newRelay(pool, broker, cfg, reg, log)
		if err != nil {
			_ = src.Close(ctx)
			return err
		}
		rr = startRelay(ctx, r, stopRun)
	}
	log.Info("ledger started", "broker", broker.Kind(), "source", cfg.source, "consumer", cfg.consumer,
		"dedupe", cfg.dedupe, "concurrency", cfg.concurrency, "batch", cfg.batch, "events", cfg.events, "relay", rr != nil)
	err = c.Run(runCtx)
	if rr != nil {
		err = errors.Join(err, rr.stop())
	}
	if err != nil {
		return err
	}
	log.Info("ledger stopped cleanly")
	return nil
}

// createTables runs tablesSQL under a transaction-level advisory lock:
// CREATE TABLE IF NOT EXISTS races with itself (a duplicate key in pg_type)
// when replicas start at the same moment, so they take turns.
func createTables(ctx context.Context, pool *pgxpool.Pool) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtextextended('oncely.examples.ledger', 0))"); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, tablesSQL)
		return err
	})
}
