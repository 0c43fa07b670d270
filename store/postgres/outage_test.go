package postgres_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/adapters/memory"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/pgtest"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/retry"
	"github.com/oncely/oncely/store"
	pgstore "github.com/oncely/oncely/store/postgres"
)

// quiet discards the runtime's logs (outage tests log every held attempt).
var quiet = slog.New(slog.DiscardHandler)

// recorder counts the runtime's events.
type recorder struct {
	mu          sync.Mutex
	outcomes    map[consumer.Outcome]int
	settled     map[string]int // processed or duplicate, per message ID
	reasons     map[string]string
	retried     []string // the errors of retried attempts, for a failure's message
	breakerOpen int
}

func newRecorder() *recorder {
	return &recorder{outcomes: map[consumer.Outcome]int{}, settled: map[string]int{}, reasons: map[string]string{}}
}

func (r *recorder) Settled(_ context.Context, ev consumer.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.outcomes[ev.Outcome]++
	switch ev.Outcome {
	case consumer.OutcomeProcessed, consumer.OutcomeDuplicate:
		r.settled[ev.Message.ID]++
	case consumer.OutcomeDeadLettered:
		r.reasons[ev.Message.ID] = ev.Reason
	case consumer.OutcomeRetried:
		r.retried = append(r.retried, fmt.Sprintf("%s: %v", ev.Message.ID, ev.Err))
	}
}

func (r *recorder) retriedErrors() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.retried...)
}

func (r *recorder) BreakerChanged(open bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if open {
		r.breakerOpen++
	}
}

func (r *recorder) count(o consumer.Outcome) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.outcomes[o]
}

func (r *recorder) done() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.outcomes[consumer.OutcomeProcessed] + r.outcomes[consumer.OutcomeDuplicate]
}

// outageRig runs a Consumer (source adapters/memory, middleware.Idempotency
// with a postgres Store on pool) over n published messages whose handler
// inserts one effect row each — or, with handlerBatch > 1, a BatchHandler
// that inserts a batch's effect rows in one statement.
type outageRig struct {
	t       *testing.T
	db      *pgtest.DB
	broker  *memory.Broker
	rec     *recorder
	c       *consumer.Consumer
	n       int
	runDone chan error
}

func startOutageRig(t *testing.T, db *pgtest.DB, pool *pgxpool.Pool, n int, storeCfg pgstore.Config, handlerBatch int) *outageRig {
	t.Helper()
	createEffects(t, db)
	storeCfg.Schema = db.Schema
	storeCfg.Logger = quiet
	s, err := pgstore.New(pool, storeCfg)
	closeAtEnd(t, s)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close(context.Background()) })

	broker := memory.NewBroker()
	msgs := make([]*consumer.Message, n)
	for i := range msgs {
		msgs[i] = &consumer.Message{ID: fmt.Sprintf("m%04d", i), Key: fmt.Sprint("k", i%16), Body: []byte("x")}
	}
	require.NoError(t, broker.Publish(context.Background(), "payments", msgs...))

	rec := newRecorder()
	h := pgstore.HandlerFunc(func(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
		_, err := tx.Exec(ctx, "INSERT INTO effects (id) VALUES ($1)", msg.ID)
		return err
	})
	if handlerBatch > 1 {
		h = pgstore.BatchHandlerFunc(func(ctx context.Context, tx pgx.Tx, msgs []*consumer.Message) error {
			ids := make([]string, len(msgs))
			for i, m := range msgs {
				ids[i] = m.ID
			}
			_, err := tx.Exec(ctx, "INSERT INTO effects (id) SELECT unnest($1::text[])", ids)
			return err
		})
	}
	c, err := consumer.New(broker.NewSource("payments", "ledger"), h, consumer.Config{
		Name:             "ledger",
		BatchSize:        handlerBatch,
		Concurrency:      max(4, storeCfg.BatchSize),
		BreakerThreshold: 3,
		OutageBackoff:    retry.Policy{InitialInterval: 20 * time.Millisecond, MaxInterval: 200 * time.Millisecond},
		Retry:            retry.Policy{MaxAttempts: 2, InitialInterval: 10 * time.Millisecond, MaxInterval: 10 * time.Millisecond},
		SoftStopTimeout:  10 * time.Second,
		Observer:         rec,
		Logger:           quiet,
	}, middleware.Idempotency(s))
	require.NoError(t, err)
	r := &outageRig{t: t, db: db, broker: broker, rec: rec, c: c, n: n, runDone: make(chan error, 1)}
	go func() { r.runDone <- c.Run(context.Background()) }()
	t.Cleanup(func() { _ = c.Stop(context.Background()) })
	return r
}

func (r *outageRig) waitProcessed(atLeast int) {
	r.t.Helper()
	require.Eventually(r.t, func() bool { return r.rec.done() >= atLeast }, 30*time.Second, 2*time.Millisecond)
}

// holdOutage waits until the breaker has paused intake, then checks that
// while the database is away nothing is acked, retried or dead-lettered.
func (r *outageRig) holdOutage() {
	r.t.Helper()
	require.Eventually(r.t, r.c.Paused, 30*time.Second, 2*time.Millisecond, "the breaker opens")
	settled := r.rec.done()
	deadline := time.Now().Add(300 * time.Millisecond)
	for time.Now().Before(deadline) {
		require.True(r.t, r.c.Paused(), "intake stays paused while the database is away")
		time.Sleep(10 * time.Millisecond)
	}
	require.Equal(r.t, settled, r.rec.done(), "nothing is acked during the outage")
	require.Positive(r.t, r.rec.count(consumer.OutcomeFailed), "held deliveries kept probing")
	require.Empty(r.t, r.rec.retriedErrors(), "nothing is retried during the outage")
	require.Zero(r.t, r.rec.count(consumer.OutcomeDeadLettered))
	require.Empty(r.t, r.broker.DeadLetters("payments", "ledger"))
}

// finish waits for every message to be acked after the database is back and
// checks 0 lost, 0 duplicated effects, no retry and no dead letter.
func (r *outageRig) finish() {
	r.t.Helper()
	require.Eventually(r.t, func() bool { return r.broker.Depth("payments") == 0 }, 60*time.Second, 5*time.Millisecond,
		"every message is acked after the database is back")
	require.False(r.t, r.c.Paused(), "the breaker closes once the database answers")
	require.NoError(r.t, r.c.Stop(context.Background()))
	require.NoError(r.t, <-r.runDone)

	counts := effectCounts(r.t, r.db)
	require.Len(r.t, counts, r.n, "0 lost")
	for id, n := range counts {
		require.Equal(r.t, 1, n, "%s: 0 duplicated effects", id)
	}
	r.rec.mu.Lock()
	defer r.rec.mu.Unlock()
	require.Len(r.t, r.rec.settled, r.n)
	for id, n := range r.rec.settled {
		require.Equal(r.t, 1, n, "%s acked once", id)
	}
	require.Empty(r.t, r.rec.retried, "nothing is retried: the database was away, not the messages' fault")
	require.Zero(r.t, r.rec.outcomes[consumer.OutcomeDeadLettered])
	require.Positive(r.t, r.rec.breakerOpen)
	require.Empty(r.t, r.broker.DeadLetters("payments", "ledger"))
	r.t.Logf("outcomes: %v, breaker opened %d times", r.rec.outcomes, r.rec.breakerOpen)
}

// outageCases are the store and handler modes the outage tests run: the
// store's single-message and savepoint batch modes, and a BatchHandler.
var outageCases = map[string]struct {
	store        pgstore.Config
	handlerBatch int
}{
	"single":        {},
	"batch":         {store: pgstore.Config{BatchSize: 8, BatchLinger: 2 * time.Millisecond}},
	"batch-handler": {handlerBatch: 32},
}

// TestOutageIsNotPoison cuts the database connections mid-stream (through a
// TCP proxy) and refuses new ones for a while.
// The batch handler's case checks that an outage holds whole batches and
// never bisects them (a bisected batch would retry its messages).
func TestOutageIsNotPoison(t *testing.T) {
	for name, tc := range outageCases {
		t.Run(name, func(t *testing.T) {
			db := pgtest.New(t)
			p, pool := proxied(t, db, 4)
			r := startOutageRig(t, db, pool, 400, tc.store, tc.handlerBatch)
			r.waitProcessed(100)
			p.Refuse()
			p.Cut()
			r.holdOutage()
			require.Positive(t, p.Refused(), "the pool tried to reconnect")
			p.Accept()
			r.finish()
		})
	}
}

// TestBadIDsAreDeadLettered: a message without an ID or with one over
// store.MaxMessageIDLength goes to the DLQ through the runtime with reason
// missing-id / invalid-id; the others are processed once.
func TestBadIDsAreDeadLettered(t *testing.T) {
	db := pgtest.New(t)
	createEffects(t, db)
	s := newStore(t, db, pgstore.Config{})
	broker := memory.NewBroker()
	long := strings.Repeat("x", store.MaxMessageIDLength+1)
	require.NoError(t, broker.Publish(context.Background(), "payments",
		&consumer.Message{ID: "ok1"}, &consumer.Message{ID: ""}, &consumer.Message{ID: long},
		&consumer.Message{ID: strings.Repeat("y", store.MaxMessageIDLength)}, &consumer.Message{ID: "ok1"}))

	rec := newRecorder()
	var runs atomic.Int32
	h := pgstore.HandlerFunc(func(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
		runs.Add(1)
		_, err := tx.Exec(ctx, "INSERT INTO effects (id) VALUES ($1)", msg.ID)
		return err
	})
	c, err := consumer.New(broker.NewSource("payments", "ledger"), h,
		consumer.Config{Name: "ledger", Concurrency: 1, Observer: rec, Logger: quiet}, middleware.Idempotency(s))
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- c.Run(context.Background()) }()
	require.Eventually(t, func() bool { return broker.Depth("payments") == 0 }, 30*time.Second, 5*time.Millisecond)
	require.NoError(t, c.Stop(context.Background()))
	require.NoError(t, <-done)

	dl := broker.DeadLetters("payments", "ledger")
	require.Len(t, dl, 2)
	reasons := map[string]string{}
	for _, m := range dl {
		reasons[m.ID] = m.Header(consumer.HeaderDeadLetterReason)
	}
	require.Equal(t, map[string]string{"": consumer.ReasonMissingID, long: consumer.ReasonInvalidID}, reasons)
	require.EqualValues(t, 2, runs.Load(), "ok1 once (its copy is a duplicate) and the 256-byte ID")
	require.Equal(t, 1, rec.count(consumer.OutcomeDuplicate))
	require.Equal(t, 2, countClaims(t, db))
}
