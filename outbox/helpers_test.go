package outbox_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/pgtest"
	"github.com/oncely/oncely/outbox"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// published is one message as the broker confirmed it.
type published struct {
	dest string
	msg  *consumer.Message
}

// recorder wraps a Broker and records every confirmed message, in order.
// fail, when set, decides whether a Publish call fails before reaching the
// broker; refuse, when set, whether the broker refuses a message, which
// fails the whole call before any message reaches the broker.
type recorder struct {
	adapters.Broker
	mu      sync.Mutex
	got     []published
	calls   map[string]int // Publish calls per destination
	changed chan struct{}
	fail    func(dest string) error
	refuse  func(dest string, m *consumer.Message) error
}

func newRecorder(b adapters.Broker) *recorder {
	return &recorder{Broker: b, changed: make(chan struct{}, 1)}
}

func (r *recorder) Publish(ctx context.Context, dest string, msgs ...*consumer.Message) error {
	r.mu.Lock()
	fail, refuse := r.fail, r.refuse
	if r.calls == nil {
		r.calls = map[string]int{}
	}
	r.calls[dest]++
	r.mu.Unlock()
	var err error
	if fail != nil {
		err = fail(dest)
	}
	for _, m := range msgs {
		if err == nil && refuse != nil {
			err = refuse(dest, m)
		}
	}
	if err == nil {
		err = r.Broker.Publish(ctx, dest, msgs...)
	}
	if err == nil {
		r.mu.Lock()
		for _, m := range msgs {
			r.got = append(r.got, published{dest: dest, msg: m})
		}
		r.mu.Unlock()
	}
	select {
	case r.changed <- struct{}{}:
	default:
	}
	return err
}

func (r *recorder) setFail(f func(dest string) error) {
	r.mu.Lock()
	r.fail = f
	r.mu.Unlock()
}

func (r *recorder) setRefuse(f func(dest string, m *consumer.Message) error) {
	r.mu.Lock()
	r.refuse = f
	r.mu.Unlock()
}

// callsTo returns how many Publish calls dest got.
func (r *recorder) callsTo(dest string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls[dest]
}

func (r *recorder) snapshot() []published {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]published(nil), r.got...)
}

// distinct returns how many distinct IDs were published.
func (r *recorder) distinct() int {
	seen := map[string]bool{}
	for _, p := range r.snapshot() {
		seen[p.msg.ID] = true
	}
	return len(seen)
}

// waitDistinct blocks until n distinct IDs were published, failing after 30 s.
func (r *recorder) waitDistinct(t testing.TB, n int) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for r.distinct() < n {
		select {
		case <-r.changed:
		case <-deadline:
			t.Fatalf("published %d distinct messages, want %d", r.distinct(), n)
		}
	}
}

// waitCalls blocks until Publish was called (successfully or not) once more.
func (r *recorder) waitCall(t testing.TB) {
	t.Helper()
	select {
	case <-r.changed:
	case <-time.After(30 * time.Second):
		t.Fatal("no Publish call within 30 s")
	}
}

func memBroker(t testing.TB) *recorder {
	t.Helper()
	b, err := adapters.Open(context.Background(), "mem://")
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	return newRecorder(b)
}

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// startRelay runs a relay until the test ends.
func startRelay(t testing.TB, r *outbox.Relay) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
}

func newRelay(t testing.TB, db *pgtest.DB, b adapters.Broker, cfg outbox.Config) *outbox.Relay {
	t.Helper()
	cfg.Schema = db.Schema
	if cfg.Logger == nil {
		cfg.Logger = quiet()
	}
	if cfg.PollInterval == 0 {
		cfg.PollInterval = 20 * time.Millisecond
	}
	if cfg.BackoffMin == 0 {
		cfg.BackoffMin = 5 * time.Millisecond
		cfg.BackoffMax = 50 * time.Millisecond
	}
	r, err := outbox.NewRelay(db.Pool, b, cfg)
	require.NoError(t, err)
	return r
}

func sender(t testing.TB, db *pgtest.DB) *outbox.Sender {
	t.Helper()
	s, err := outbox.NewSender(db.Schema)
	require.NoError(t, err)
	return s
}

// sendTx sends msgs to dest in one committed transaction.
func sendTx(t testing.TB, db *pgtest.DB, s *outbox.Sender, dest string, msgs ...*consumer.Message) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
		for _, m := range msgs {
			if err := s.Send(ctx, tx, dest, m); err != nil {
				return err
			}
		}
		return nil
	}))
}

func msg(id, key, body string) *consumer.Message {
	return &consumer.Message{ID: id, Key: key, Body: []byte(body)}
}

// unpublished counts the outbox rows not yet marked published.
func unpublished(t testing.TB, db *pgtest.DB) int {
	t.Helper()
	var n int
	require.NoError(t, db.Pool.QueryRow(context.Background(),
		fmt.Sprintf("SELECT count(*) FROM %s WHERE published_at IS NULL", pgx.Identifier{db.Schema, outbox.Table}.Sanitize())).Scan(&n))
	return n
}

// waitUnpublished blocks until no row is unpublished, failing after 30 s.
// The relay marks after it publishes, so this polls the table; the poll is
// bounded in count and time.
func waitUnpublished(t testing.TB, db *pgtest.DB, want int) {
	t.Helper()
	for range 3000 {
		if unpublished(t, db) == want {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("unpublished rows: %d, want %d", unpublished(t, db), want)
}

// waitABit paces bounded polls of database state.
func waitABit() { time.Sleep(10 * time.Millisecond) }
