package postgres_test

import (
	"context"
	"fmt"
	"hash/fnv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/pgtest"
	"github.com/oncely/oncely/middleware"
	pgstore "github.com/oncely/oncely/store/postgres"
)

// The benchmark's handler, identical in both paths: move money on one of
// 1,000 accounts and append a ledger row.
const (
	benchAccounts = 1000
	updateSQL     = "UPDATE accounts SET balance = balance + $1 WHERE id = $2"
	ledgerSQL     = "INSERT INTO ledger (message_id, account_id, amount) VALUES ($1, $2, $3)"
)

type benchEnv struct {
	db       *pgtest.DB
	claimSQL string
	run      atomic.Int64 // makes IDs unique across drives
}

func newBenchEnv(b *testing.B, maxConns int32) *benchEnv {
	b.Helper()
	db := pgtest.New(b, pgtest.Options{MaxConns: maxConns})
	ctx := context.Background()
	for _, q := range []string{
		"CREATE TABLE accounts (id int PRIMARY KEY, balance bigint NOT NULL DEFAULT 0)",
		"INSERT INTO accounts (id) SELECT generate_series(1, 1000)",
		"CREATE TABLE ledger (id bigserial PRIMARY KEY, message_id text NOT NULL, account_id int NOT NULL, amount bigint NOT NULL, created_at timestamptz NOT NULL DEFAULT now())",
	} {
		if _, err := db.Pool.Exec(ctx, q); err != nil {
			b.Fatal(err)
		}
	}
	return &benchEnv{
		db:       db,
		claimSQL: "INSERT INTO " + pgx.Identifier{db.Schema, pgstore.Table}.Sanitize() + " (consumer, message_id) VALUES ($1, $2) ON CONFLICT DO NOTHING",
	}
}

func account(id string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(id))
	return int(h.Sum32()%benchAccounts) + 1
}

// execer runs a statement: the handler's transaction, or the raw side's
// connection inside its transaction.
type execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// applyTx is the handler's work.
func applyTx(ctx context.Context, tx execer, id string) error {
	acct := account(id)
	if _, err := tx.Exec(ctx, updateSQL, 1, acct); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, ledgerSQL, id, acct, 1)
	return err
}

// driver processes one message.
type driver func(ctx context.Context, id string) error

// rawDriver is the baseline: the same statements through pgx, no
// framework, in as many round trips as the store takes (BEGIN and the claim
// sent together, then the handler's statements and COMMIT), so the ratio
// compares the framework's cost and not a round trip it saves.
func (e *benchEnv) rawDriver(pool *pgxpool.Pool) driver {
	return func(ctx context.Context, id string) error {
		var b pgx.Batch
		b.Queue("BEGIN")
		b.Queue(e.claimSQL, "raw", id)
		conn, err := pool.Acquire(ctx)
		if err != nil {
			return err
		}
		defer conn.Release()
		if err := conn.SendBatch(ctx, &b).Close(); err != nil {
			return err
		}
		if err := applyTx(ctx, conn, id); err != nil {
			_, _ = conn.Exec(ctx, "ROLLBACK")
			return err
		}
		_, err = conn.Exec(ctx, "COMMIT")
		return err
	}
}

// storeDriver goes through middleware.Idempotency and the Store, as the
// runtime would call the chain.
func storeDriver(b *testing.B, pool *pgxpool.Pool, cfg pgstore.Config) driver {
	s, err := pgstore.New(pool, cfg)
	closeAtEnd(b, s)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close(context.Background()) })
	h := consumer.Chain(pgstore.HandlerFunc(func(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
		return applyTx(ctx, tx, msg.ID)
	}), middleware.Idempotency(s))
	return func(ctx context.Context, id string) error {
		ctx = consumer.WithAttemptState(consumer.WithName(ctx, "ledger"))
		if err := h.Handle(ctx, &consumer.Message{ID: id}); err != nil {
			return err
		}
		if consumer.IsDuplicate(ctx) {
			return fmt.Errorf("%s: unexpected duplicate", id)
		}
		return nil
	}
}

// drive runs n fresh messages through d from conc goroutines and returns the
// elapsed time.
func (e *benchEnv) drive(b *testing.B, d driver, conc, n int) time.Duration {
	b.Helper()
	run := e.run.Add(1)
	ctx := context.Background()
	var next atomic.Int64
	var wg sync.WaitGroup
	var firstErr atomic.Value
	start := time.Now()
	for range conc {
		wg.Go(func() {
			for {
				i := next.Add(1)
				if i > int64(n) {
					return
				}
				if err := d(ctx, fmt.Sprintf("r%d-%d", run, i)); err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := firstErr.Load(); err != nil {
		b.Fatal(err)
	}
	return elapsed
}

// compare drives n messages through base and subject in alternating chunks
// (rounds of ABBA, so that load changes on a shared machine hit both alike)
// after a warm-up, and reports msgs/s of both and subject/base.
func (e *benchEnv) compare(b *testing.B, base, subject driver, baseName, subjName string, conc, n, rounds int) {
	chunk := (n/(2*rounds) + conc - 1) / conc * conc // whole waves of conc callers
	e.drive(b, base, conc, chunk)
	e.drive(b, subject, conc, chunk)
	var tb, ts time.Duration
	msgs := 0
	for b.Loop() {
		for range rounds {
			tb += e.drive(b, base, conc, chunk)
			ts += e.drive(b, subject, conc, chunk)
			ts += e.drive(b, subject, conc, chunk)
			tb += e.drive(b, base, conc, chunk)
			msgs += 2 * chunk
		}
	}
	baseRate := float64(msgs) / tb.Seconds()
	subjRate := float64(msgs) / ts.Seconds()
	b.ReportMetric(baseRate, baseName+"_msgs/s")
	b.ReportMetric(subjRate, subjName+"_msgs/s")
	b.ReportMetric(subjRate/baseRate, "x_"+baseName)
	b.ReportMetric(0, "ns/op")
}

// BenchmarkSingle compares single-message mode with the raw pgx baseline
// (BEGIN; the same claim INSERT; UPDATE; INSERT; COMMIT) at concurrency 1, 4
// and 16. Target: x_raw >= 0.9.
//
//	go test -run '^$' -bench Single -benchtime 3x ./store/postgres/
func BenchmarkSingle(b *testing.B) {
	for _, conc := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("c=%d", conc), func(b *testing.B) {
			e := newBenchEnv(b, 16)
			n := 1000 * max(1, conc/4) // 1,000 / 1,000 / 4,000 messages per mode and iteration
			e.compare(b, e.rawDriver(e.db.Pool), storeDriver(b, e.db.Pool, pgstore.Config{Schema: e.db.Schema}), "raw", "store", conc, n, 4)
		})
	}
}

// BenchmarkBatch compares batch mode (BatchSize 50) with single-message mode
// under the same load: 100 concurrent deliveries, a pool of 16 connections.
// It sets no target: batching saves a commit per message, so what it gains
// depends on what a commit costs on the machine (docs/benchmarks.md).
//
//	go test -run '^$' -bench Batch -benchtime 1x -count 3 ./store/postgres/
func BenchmarkBatch(b *testing.B) {
	const callers = 100
	e := newBenchEnv(b, 16)
	single := storeDriver(b, e.db.Pool, pgstore.Config{Schema: e.db.Schema})
	batch := storeDriver(b, e.db.Pool, pgstore.Config{Schema: e.db.Schema, BatchSize: 50})
	// One round of long drives: batch mode measured in steady state (in
	// short drives its start and end weigh more).
	e.compare(b, single, batch, "single", "batch", callers, 6000, 1)
}
