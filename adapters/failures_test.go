package adapters_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/envtest"
	"github.com/oncely/oncely/internal/kafkatest"
	"github.com/oncely/oncely/internal/pgtest"
	"github.com/oncely/oncely/internal/proxytest"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/retry"
	pgstore "github.com/oncely/oncely/store/postgres"
)

// failureClass is one row of the failure matrix: a way a message or a
// dependency fails, and the route the runtime must give it on every broker.
type failureClass struct {
	name string
	// id of the failing message; a healthy "ok" message is published beside
	// it so the matrix also shows the rest proceeds.
	id string
	// handler fails the message; db is the test's database, attempt the
	// delivery's attempt.
	fail func(ctx context.Context, db *matrixDB, tx pgx.Tx, msg *consumer.Message) error
	// dbDown cuts the store's connections before the run and restores them
	// once the breaker opened.
	dbDown bool
	// brokers the class does not apply to, with why.
	notOn map[string]string
	// message, when set, builds the failing message for a broker whose
	// copies are limited to limit bytes (see copyLimit); the class then
	// runs with that limit.
	message func(broker string, limit int) *consumer.Message
	// check, when set, replaces the check of the dead letter's body:
	// sent is the message published.
	check func(t *testing.T, broker string, dl adapters.DeadLetter, sent *consumer.Message)

	// The expected route.
	reason      string // dead-letter reason, "" when the message must be processed
	attempts    int    // the attempt it is processed or dead-lettered at
	breakerOpen bool   // whether the breaker must have opened
	trimmed     bool   // whether the dead-letter copy must be reported trimmed (Event.Trimmed)
}

var failureClasses = []failureClass{
	// A TAB: a control character the runtime refuses (a store keys claims by
	// the ID) that every broker carries, SQS included (its attributes allow
	// TAB, LF and CR, but no other character below U+0020).
	{name: "invalid-id", id: "bad\tid", reason: consumer.ReasonInvalidID, attempts: 1},
	{name: "permanent", id: "perm", reason: consumer.ReasonPermanent, attempts: 1,
		fail: func(context.Context, *matrixDB, pgx.Tx, *consumer.Message) error {
			return consumer.Permanent(errors.New("undecodable"))
		}},
	{name: "exhausted", id: "flaky", reason: consumer.ReasonExhausted, attempts: 3,
		fail: func(context.Context, *matrixDB, pgx.Tx, *consumer.Message) error { return errors.New("always fails") }},
	{name: "data-error", id: "divide", reason: consumer.ReasonExhausted, attempts: 3,
		fail: func(ctx context.Context, _ *matrixDB, tx pgx.Tx, _ *consumer.Message) error {
			_, err := tx.Exec(ctx, "SELECT 1/0") // SQLSTATE 22012: the database answers, the statement is this message's
			return err
		}},
	{name: "connection-killed", id: "killed", attempts: 2,
		fail: func(ctx context.Context, db *matrixDB, tx pgx.Tx, msg *consumer.Message) error {
			if msg.Attempt > 1 {
				return nil
			}
			var pid int
			if err := tx.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
				return err
			}
			if _, err := db.admin.Exec(ctx, "SELECT pg_terminate_backend($1)", pid); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, "SELECT 1")
			return err
		}},
	{name: "database-down", id: "held", attempts: 1, dbDown: true, breakerOpen: true},
	copyTooLarge,
	headersTooLarge,
}

// TestFailureMatrix: each failure class on each broker takes its documented
// route (docs/delivery-semantics.md), asserted on what the broker (dead
// letters, queue) and the database (claims, effects) hold afterwards, and the
// healthy message beside it is processed once. Catches: an outage decided by
// the error's type (data-error, connection-killed held or breaking), a
// breaker that never closes (database-down), IDs checked for length only
// (invalid-id), a dead-letter copy over the broker's limit held forever
// (copy-too-large, headers-too-large).
func TestFailureMatrix(t *testing.T) {
	brokers := []struct{ name, url string }{
		{"memory", "mem://"},
		{"kafka", suiteKafka(t) + "?tiers=100ms"},
		{"rabbitmq", envtest.RabbitMQ(t) + "?tiers=100ms&prefetch=16"}, // the runtime below runs MaxInFlight 16
		{"sqs", "sqs://us-east-1?endpoint=" + envtest.SQS(t) + "&visibility_timeout=5s&wait=1"},
		{"redis", envtest.Redis(t) + "?lease=5s"},
		{"nats", envtest.NATS(t) + "?prefetch=16"}, // the runtime below runs MaxInFlight 16
	}
	for _, b := range brokers {
		t.Run(b.name, func(t *testing.T) {
			for _, fc := range failureClasses {
				t.Run(fc.name, func(t *testing.T) {
					if why, ok := fc.notOn[b.name]; ok {
						t.Logf("not applicable: %s", why)
						return
					}
					runFailureClass(t, b.name, b.url, fc, pgstore.Config{})
				})
			}
		})
	}
}

// TestFailureMatrixBatchStore: the classes that reach the store take the
// same route with the store in batch mode, where the two messages of a run
// share one transaction, each in its own savepoint. The broker does not
// matter to them: memory only. Catches: a failing message that takes its
// batch's other messages with it (data-error: the healthy one rolled back,
// failed or dead-lettered), a killed batch connection counted as an outage or
// dead-lettering the batch (connection-killed), a batch whose BEGIN fails
// on a database that is down treated as the messages' failure instead of an
// outage, or never retried once it is back (database-down), an invalid ID
// handed to the batch (invalid-id).
func TestFailureMatrixBatchStore(t *testing.T) {
	batch := pgstore.Config{BatchSize: 8, BatchLinger: 2 * time.Millisecond}
	for _, fc := range failureClasses {
		switch fc.name {
		case "invalid-id", "data-error", "connection-killed", "database-down":
			t.Run(fc.name, func(t *testing.T) { runFailureClass(t, "memory", "mem://", fc, batch) })
		}
	}
}

// matrixDB is a test's schema: the store's pool (through a proxy that can
// cut it), an admin pool, and the effects table.
type matrixDB struct {
	store *pgstore.Store
	admin *pgxpool.Pool
	proxy *proxytest.Proxy
}

// runFailureClass runs fc on broker (opened by url) with a Postgres store
// configured by storeCfg (its Schema is the test's).
func runFailureClass(t *testing.T, broker, url string, fc failureClass, storeCfg pgstore.Config) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	pg := pgtest.New(t)
	_, err := pg.Pool.Exec(ctx, "CREATE TABLE effects (id text PRIMARY KEY, n int NOT NULL DEFAULT 1)")
	require.NoError(t, err)
	proxy, err := proxytest.New(pgHostPort(t, pg.URL))
	require.NoError(t, err)
	t.Cleanup(func() { _ = proxy.Close() })
	pool := pg.NewPool(t, func(c *pgxpool.Config) {
		host, port, _ := net.SplitHostPort(proxy.Addr())
		p, _ := strconv.Atoi(port)
		c.ConnConfig.Host, c.ConnConfig.Port = host, uint16(p)
	})
	storeCfg.Schema, storeCfg.Logger = pg.Schema, quietLog
	st, err := pgstore.New(pool, storeCfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close(context.Background()) })
	db := &matrixDB{store: st, admin: pg.Pool, proxy: proxy}

	source := fmt.Sprintf("matrix-%s-%d", fc.name, rand.Uint64()%1e9)
	const name = "ledger"
	failing := &consumer.Message{ID: fc.id, Key: "k1", Body: []byte(fc.name)}
	if fc.message != nil {
		var limit int
		url, limit = copyLimit(t, broker, url, source, name)
		failing = fc.message(broker, limit)
	}
	b, err := adapters.Open(ctx, url)
	require.NoError(t, err)
	defer func() { require.NoError(t, b.Close()) }()
	require.NoError(t, b.Publish(ctx, source, failing,
		&consumer.Message{ID: "ok", Key: "k2", Body: []byte("healthy")}))

	h := pgstore.HandlerFunc(func(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
		if fc.fail != nil && msg.ID == fc.id {
			if err := fc.fail(ctx, db, tx, msg); err != nil {
				return err
			}
		}
		_, err := tx.Exec(ctx, "INSERT INTO effects (id) VALUES ($1) ON CONFLICT (id) DO UPDATE SET n = effects.n + 1", msg.ID)
		return err
	})
	var mu sync.Mutex
	final := map[string]consumer.Event{}
	var opened, closed int
	done := make(chan struct{})
	obs := &matrixObserver{settled: func(ev consumer.Event) {
		mu.Lock()
		defer mu.Unlock()
		switch ev.Outcome {
		case consumer.OutcomeProcessed, consumer.OutcomeDeadLettered, consumer.OutcomeDuplicate:
			final[ev.Message.ID] = ev
			if len(final) == 2 {
				close(done)
			}
		}
	}, breaker: func(open bool) {
		mu.Lock()
		defer mu.Unlock()
		if open {
			opened++
			if fc.dbDown {
				proxy.Accept() // the database is back; the breaker must find out by itself
			}
		} else {
			closed++
		}
	}}
	src, err := b.Source(ctx, source, name)
	require.NoError(t, err)
	concurrency := 2
	if fc.dbDown {
		// One attempt at a time: a second message failing while the first
		// one's probe reopened the database would find it up, and count
		// its failure as an attempt (right, but not this class's route).
		concurrency = 1
	}
	c, err := consumer.New(src, h, consumer.Config{
		Name: name, Concurrency: concurrency, MaxInFlight: 16, BreakerThreshold: 1, Observer: obs, Logger: quietLog,
		Retry:         retry.Policy{MaxAttempts: 3, InitialInterval: 100 * time.Millisecond, MaxInterval: 100 * time.Millisecond, Jitter: retry.NoJitter},
		OutageBackoff: retry.Policy{InitialInterval: 20 * time.Millisecond, MaxInterval: 200 * time.Millisecond},
	}, middleware.Idempotency(st))
	require.NoError(t, err)
	if fc.dbDown {
		proxy.Refuse()
		proxy.Cut()
	}
	runErr := make(chan error, 1)
	go func() { runErr <- c.Run(ctx) }()
	select {
	case <-done:
	case err := <-runErr:
		t.Fatalf("consumer stopped early: %v", err)
	case <-ctx.Done():
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("only %d of 2 messages settled for good: %v", len(final), final)
	}
	require.NoError(t, c.Stop(ctx))

	mu.Lock()
	defer mu.Unlock()
	// The healthy message: processed once, at its first attempt, whatever
	// happened beside it (in batch mode, in its transaction).
	require.Equal(t, consumer.OutcomeProcessed, final["ok"].Outcome)
	require.Equal(t, 1, final["ok"].Message.Attempt, "attempt of the healthy message")
	ev := final[fc.id]
	require.Equal(t, fc.attempts, ev.Message.Attempt, "attempt of the final outcome")
	require.Equal(t, fc.breakerOpen, opened > 0, "breaker opened %d times", opened)
	require.Equal(t, fc.trimmed, ev.Trimmed, "copy reported trimmed (oncely_copies_trimmed_total)")
	require.Equal(t, opened, closed, "every opening is followed by a close")

	// What the database holds: one claim and one effect per processed
	// message, nothing for a dead-lettered one.
	effects := map[string]int{}
	rows, err := pg.Pool.Query(ctx, "SELECT id, n FROM effects")
	require.NoError(t, err)
	for rows.Next() {
		var id string
		var n int
		require.NoError(t, rows.Scan(&id, &n))
		effects[id] = n
	}
	require.NoError(t, rows.Err())
	var claims []string
	rows, err = pg.Pool.Query(ctx, "SELECT message_id FROM "+pgx.Identifier{pg.Schema, pgstore.Table}.Sanitize()+" ORDER BY message_id")
	require.NoError(t, err)
	for rows.Next() {
		var id string
		require.NoError(t, rows.Scan(&id))
		claims = append(claims, id)
	}
	require.NoError(t, rows.Err())

	// What the broker holds: the dead letter, with its reason and context.
	dls, err := b.DeadLetters(ctx, source, name, 0)
	require.NoError(t, err)
	if fc.reason == "" {
		require.Equal(t, consumer.OutcomeProcessed, ev.Outcome)
		require.Equal(t, map[string]int{"ok": 1, fc.id: 1}, effects)
		require.ElementsMatch(t, []string{"ok", fc.id}, claims)
		require.Empty(t, dls)
	} else {
		require.Equal(t, consumer.OutcomeDeadLettered, ev.Outcome)
		require.Equal(t, fc.reason, ev.Reason)
		require.Equal(t, map[string]int{"ok": 1}, effects)
		require.Equal(t, []string{"ok"}, claims)
		require.Len(t, dls, 1)
		require.Equal(t, fc.id, dls[0].Message.ID)
		require.Equal(t, fc.reason, dls[0].Reason())
		require.Equal(t, fc.attempts, dls[0].Attempts())
		require.NotEmpty(t, dls[0].Error())
		if fc.check != nil {
			fc.check(t, broker, dls[0], failing)
		} else {
			require.Equal(t, fc.name, string(dls[0].Message.Body))
		}
	}
	lines, err := b.Backlog(ctx, source, name)
	require.NoError(t, err)
	var lag int64
	for _, l := range lines {
		lag += max(0, l.Lag)
	}
	require.Zero(t, lag, "nothing left on the source: %+v", lines)
}

// quietLog discards the runtime's logs (held attempts log each retry).
var quietLog = slog.New(slog.DiscardHandler)

type matrixObserver struct {
	settled func(consumer.Event)
	breaker func(bool)
}

func (o *matrixObserver) Settled(_ context.Context, ev consumer.Event) { o.settled(ev) }
func (o *matrixObserver) BreakerChanged(open bool)                     { o.breaker(open) }

// suiteKafka is the suite's Kafka URL (a real broker under KAFKA_BROKERS, see
// internal/kafkatest).
func suiteKafka(t testing.TB) string {
	return "kafka://" + strings.Join(kafkatest.Brokers(t, kfake.DefaultNumPartitions(3)), ",")
}

func pgHostPort(t *testing.T, url string) string {
	cfg, err := pgx.ParseConfig(url)
	require.NoError(t, err)
	return net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port)))
}
