package rabbitmq

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oncely/oncely/adapters/adaptertest"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/pgtest"
	"github.com/oncely/oncely/middleware"
	pgstore "github.com/oncely/oncely/store/postgres"
)

// The kill test re-executes the test binary as a consumer process; these
// environment variables tell TestMain to run runChild instead of the tests.
const (
	childEnv       = "ONCELY_RABBITMQ_CHILD"
	childURLEnv    = "ONCELY_RABBITMQ_CHILD_URL"
	childQueueEnv  = "ONCELY_RABBITMQ_CHILD_QUEUE"
	childPGEnv     = "ONCELY_RABBITMQ_CHILD_PG"
	childSchemaEnv = "ONCELY_RABBITMQ_CHILD_SCHEMA"
)

// effectsTable has no unique key on purpose: a handler run twice for one
// message would leave two rows.
const effectsTable = "effects"

// consumerChain is the consumer both processes run: claim-first
// idempotency in Postgres, and a handler whose effect is a row in the same
// transaction as the claim.
func consumerChain(st *pgstore.Store, delay time.Duration) (consumer.Handler, []consumer.Middleware) {
	h := pgstore.HandlerFunc(func(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
		time.Sleep(delay)
		_, err := tx.Exec(ctx, "INSERT INTO "+effectsTable+" (message_id, attempt) VALUES ($1, $2)", m.ID, m.Attempt)
		return err
	})
	return h, []consumer.Middleware{middleware.Idempotency(st)}
}

// runChild is the consumer process of TestKillConsumerProcess: it consumes
// until it is killed.
func runChild() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 2
	}
	pool, err := newPool(ctx, os.Getenv(childPGEnv), os.Getenv(childSchemaEnv))
	if err != nil {
		return fail(err)
	}
	defer pool.Close()
	st, err := pgstore.New(pool, pgstore.Config{Schema: os.Getenv(childSchemaEnv), Logger: log})
	if err != nil {
		return fail(err)
	}
	defer func() { _ = st.Close(context.Background()) }()
	src, err := New(ctx, Config{URL: os.Getenv(childURLEnv), Queue: os.Getenv(childQueueEnv), Consumer: "ledger", Prefetch: 50, Tiers: testTiers, Logger: log})
	if err != nil {
		return fail(err)
	}
	h, mws := consumerChain(st, 5*time.Millisecond)
	c, err := consumer.New(src, h, consumer.Config{Name: "ledger", Concurrency: 8, Ordering: consumer.Unordered, Logger: log}, mws...)
	if err != nil {
		return fail(err)
	}
	fmt.Println("consuming")
	if err := c.Run(ctx); err != nil {
		return fail(err)
	}
	return 0
}

func newPool(ctx context.Context, url, schema string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = 10
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	cfg.ConnConfig.RuntimeParams["application_name"] = childAppName(schema)
	return pgxpool.NewWithConfig(ctx, cfg)
}

// childAppName names the killed child's database sessions, so the test can
// wait for the server to finish what the child had sent (a COMMIT in flight
// at the kill still commits) before it counts the effects.
func childAppName(schema string) string {
	return "oncely-kill-child-" + schema
}

// TestKillConsumerProcess SIGKILLs a consumer process mid-stream (its
// connection drops with deliveries unacked, some of them already applied)
// and lets a second consumer finish: every message not acked is redelivered,
// and with the Postgres claim-first idempotency store every effect is
// applied exactly once.
func TestKillConsumerProcess(t *testing.T) {
	const n = 1000
	db := pgtest.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	if _, err := db.Pool.Exec(ctx, "CREATE TABLE "+effectsTable+" (message_id text NOT NULL, attempt int NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	effects := func() (rows, distinct int) {
		t.Helper()
		if err := db.Pool.QueryRow(ctx, "SELECT count(*), count(DISTINCT message_id) FROM "+effectsTable).Scan(&rows, &distinct); err != nil {
			t.Fatal(err)
		}
		return rows, distinct
	}
	queue := uniqueName("kill")
	cleanupTopology(t, queue, "ledger", testTiers)
	publish(t, queue, msgs("m", n)...)

	var out bytes.Buffer
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=1", childURLEnv+"="+testURL(t), childQueueEnv+"="+queue,
		childPGEnv+"="+db.URL, childSchemaEnv+"="+db.Schema)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	t.Cleanup(func() {
		if !killed {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	adaptertest.WaitUntil(t, 60*time.Second, "the child to apply a few hundred effects", func() bool {
		rows, _ := effects()
		return rows >= n/4
	})
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	killed = true
	adaptertest.WaitUntil(t, 30*time.Second, "the killed child's database sessions to end", func() bool {
		var sessions int
		if err := db.Pool.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", childAppName(db.Schema)).Scan(&sessions); err != nil {
			t.Fatal(err)
		}
		return sessions == 0
	})
	appliedAtKill, _ := effects()
	// The broker sees the dead TCP connection and requeues what it held.
	var back int
	adaptertest.WaitUntil(t, 30*time.Second, "the killed consumer's deliveries back in the queue", func() bool {
		back = depth(t, queue)
		return back+appliedAtKill >= n
	})
	inDoubt := back + appliedAtKill - n // applied but not acked when killed
	t.Logf("child killed after applying %d; %d back in the queue (%d of them applied but unacked)\nchild output:\n%s", appliedAtKill, back, inDoubt, out.String())

	// A second consumer (in this process) finishes the queue.
	st, err := pgstore.New(db.Pool, pgstore.Config{Schema: db.Schema, Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close(context.Background()) }) // after the consumer stopped
	src := newSource(t, Config{Queue: queue, Consumer: "ledger", Prefetch: 50})
	obs := newCounter()
	redelivered := newSet()
	h, mws := consumerChain(st, 0)
	_, stop := runConsumer(t, src, consumer.HandlerFunc(func(ctx context.Context, m *consumer.Message) error {
		if c, _ := strconv.Atoi(m.Coordinates[headerXDeliveryCount]); c > 0 {
			redelivered.add(m.ID)
		}
		return h.Handle(ctx, m)
	}), consumer.Config{Name: "ledger", Concurrency: 8, Ordering: consumer.Unordered, Observer: obs}, mws...)
	adaptertest.WaitUntil(t, 60*time.Second, "the queue to drain", func() bool {
		return obs.get(consumer.OutcomeProcessed)+obs.get(consumer.OutcomeDuplicate) >= back
	})
	stop()

	rows, distinct := effects()
	t.Logf("after the restart: %d processed, %d duplicates skipped by the claim, %d redelivered (x-delivery-count > 0); effects: %d rows, %d distinct",
		obs.get(consumer.OutcomeProcessed), obs.get(consumer.OutcomeDuplicate), redelivered.len(), rows, distinct)
	if rows != n || distinct != n {
		t.Errorf("effects: %d rows for %d distinct messages, want %d and %d (exactly once)", rows, distinct, n, n)
	}
	if got := obs.get(consumer.OutcomeDuplicate); got != inDoubt {
		t.Errorf("%d duplicates skipped, want %d (applied but unacked at the kill)", got, inDoubt)
	}
	if redelivered.len() == 0 {
		t.Errorf("no message came back with x-delivery-count > 0: the kill left nothing unacked?")
	}
	if d := depth(t, queue); d != 0 {
		t.Errorf("queue holds %d, want 0", d)
	}
	var dup int
	if err := db.Pool.QueryRow(ctx, "SELECT count(*) FROM (SELECT message_id FROM "+effectsTable+" GROUP BY message_id HAVING count(*) > 1) d").Scan(&dup); err != nil {
		t.Fatal(err)
	}
	if dup != 0 {
		t.Errorf("%d messages applied more than once", dup)
	}
}
