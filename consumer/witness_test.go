package consumer_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/oncely/oncely/adapters/memory"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	memstore "github.com/oncely/oncely/store/memory"
)

// witnessRig is a memory broker, a claims store and a consumer over them,
// built from a chain the test chooses.
type witnessRig struct {
	t      *testing.T
	broker *memory.Broker
	idem   consumer.Middleware
	rec    *recorder
	log    bytes.Buffer
	logMu  sync.Mutex
}

func newWitnessRig(t *testing.T) *witnessRig {
	t.Helper()
	st, err := memstore.New(memstore.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return &witnessRig{t: t, broker: memory.NewBroker(), idem: middleware.Idempotency(st), rec: newRecorder()}
}

func (r *witnessRig) Write(p []byte) (int, error) {
	r.logMu.Lock()
	defer r.logMu.Unlock()
	return r.log.Write(p)
}

func (r *witnessRig) logs() string {
	r.logMu.Lock()
	defer r.logMu.Unlock()
	return r.log.String()
}

// newConsumer builds a consumer named "test" of source "src" over h and mws.
func (r *witnessRig) newConsumer(h consumer.Handler, dups consumer.Duplicates, mws ...consumer.Middleware) (*consumer.Consumer, error) {
	return consumer.New(r.broker.NewSource("src", "test"), h, consumer.Config{
		Name: "test", Logger: slog.New(slog.NewTextHandler(r, nil)), Observer: r.rec,
		Retry: fastRetry(1), Duplicates: dups,
	}, mws...)
}

func (r *witnessRig) publish(msgs ...*consumer.Message) {
	r.t.Helper()
	if err := r.broker.Publish(context.Background(), "src", msgs...); err != nil {
		r.t.Fatal(err)
	}
}

// settled waits until n deliveries were settled.
func (r *witnessRig) settled(n int) {
	r.t.Helper()
	waitFor(r.t, "settlements", func() bool {
		r.rec.mu.Lock()
		defer r.rec.mu.Unlock()
		return len(r.rec.events) >= n
	})
}

// teamMiddleware is a platform team's own middleware that wraps
// middleware.Idempotency out of New's sight: its handler is a plain
// HandlerFunc. Messages with key "bypass" are routed around the claim, as a
// feature flag would.
func teamMiddleware(idem consumer.Middleware) consumer.Middleware {
	return func(next consumer.Handler) consumer.Handler {
		claimed := idem(next)
		return consumer.HandlerFunc(func(ctx context.Context, m *consumer.Message) error {
			if m.Key == "bypass" {
				return next.Handle(ctx, m)
			}
			return claimed.Handle(ctx, m)
		})
	}
}

// TestNewAcceptsCorrectChains: however a deduplicating chain is built —
// passed to New, pre-chained, nested, or wrapped in a team's own middleware
// — New accepts it and every message is processed once, then found a
// duplicate. Bug caught: New judging only the middleware it was given
// (a Chain-built handler was refused with ErrNoIdempotency).
func TestNewAcceptsCorrectChains(t *testing.T) {
	ok := consumer.HandlerFunc(func(context.Context, *consumer.Message) error { return nil })
	for _, tc := range []struct {
		name  string
		build func(idem consumer.Middleware) (consumer.Handler, []consumer.Middleware)
	}{
		{"given to New", func(idem consumer.Middleware) (consumer.Handler, []consumer.Middleware) {
			return ok, []consumer.Middleware{passThrough, idem}
		}},
		{"pre-chained", func(idem consumer.Middleware) (consumer.Handler, []consumer.Middleware) {
			return consumer.Chain(ok, passThrough, idem), nil
		}},
		{"nested Chain", func(idem consumer.Middleware) (consumer.Handler, []consumer.Middleware) {
			return consumer.Chain(consumer.Chain(ok, idem), passThrough), []consumer.Middleware{passThrough}
		}},
		{"team middleware", func(idem consumer.Middleware) (consumer.Handler, []consumer.Middleware) {
			return ok, []consumer.Middleware{passThrough, teamMiddleware(idem)}
		}},
		{"team middleware pre-chained", func(idem consumer.Middleware) (consumer.Handler, []consumer.Middleware) {
			return consumer.Chain(ok, teamMiddleware(idem)), nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newWitnessRig(t)
			h, mws := tc.build(r.idem)
			c, err := r.newConsumer(h, consumer.Duplicates{}, mws...)
			if err != nil {
				t.Fatalf("New refused a correct chain: %v", err)
			}
			stop := startConsumer(t, c)
			defer stop()
			r.publish(msgN(1, "a"), msgN(2, "b"))
			r.settled(2)
			r.publish(msgN(1, "a"))
			r.settled(3)
			if got := r.rec.count(consumer.OutcomeProcessed); got != 2 {
				t.Errorf("processed %d, want 2", got)
			}
			if got := r.rec.count(consumer.OutcomeDuplicate); got != 1 {
				t.Errorf("duplicates %d, want 1", got)
			}
			if dl := r.broker.DeadLetters("src", "test"); len(dl) != 0 {
				t.Errorf("%d dead letters, want none: %v", len(dl), dl[0].Headers)
			}
		})
	}
}

// TestNewRefusesWhatItCanProve: no middleware at all, an opt-out beside a
// deduplicating chain (also pre-chained), and a nil middleware, named by
// position.
func TestNewRefusesWhatItCanProve(t *testing.T) {
	r := newWitnessRig(t)
	ok := consumer.HandlerFunc(func(context.Context, *consumer.Message) error { return nil })
	if _, err := r.newConsumer(ok, consumer.Duplicates{}); !errors.Is(err, consumer.ErrNoIdempotency) {
		t.Errorf("no middleware: New = %v, want ErrNoIdempotency", err)
	}
	optOut := consumer.AllowDuplicates("upserts")
	if _, err := r.newConsumer(consumer.Chain(ok, passThrough, r.idem), optOut); err == nil || !strings.Contains(err.Error(), "drop one of the two") {
		t.Errorf("opt-out beside a pre-chained Idempotency: New = %v, want refused", err)
	}
	var optional consumer.Middleware // an optional dedupe turned off
	if _, err := r.newConsumer(ok, consumer.Duplicates{}, passThrough, optional); err == nil || !strings.Contains(err.Error(), "middleware 2 of 2 is nil") {
		t.Errorf("nil middleware: New = %v, want an error naming middleware 2 of 2", err)
	}
}

// TestWitnessDeadLettersUnclaimed: a chain that routes some messages around
// its claim (a feature flag in a team's middleware), and a handler marked
// Deduplicating that claims nothing, pass New; every message that returned
// without a claim is dead-lettered with reason no-claim and an error log,
// never acked, while the claimed ones are processed and the consumer goes
// on. Bug caught: acking a message as deduplicated when no claim ran.
func TestWitnessDeadLettersUnclaimed(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mws    func(idem consumer.Middleware) []consumer.Middleware
		bypass int // messages expected without a claim
	}{
		{"flag routes around the claim", func(idem consumer.Middleware) []consumer.Middleware {
			return []consumer.Middleware{teamMiddleware(idem)}
		}, 2},
		{"Deduplicating without a claim", func(consumer.Middleware) []consumer.Middleware {
			return []consumer.Middleware{func(h consumer.Handler) consumer.Handler { return consumer.Deduplicating(h) }}
		}, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newWitnessRig(t)
			ran := newCounter()
			h := consumer.HandlerFunc(func(_ context.Context, m *consumer.Message) error { ran.add(m.ID); return nil })
			c, err := r.newConsumer(h, consumer.Duplicates{}, tc.mws(r.idem)...)
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			stop := startConsumer(t, c)
			defer stop()
			r.publish(msgN(1, "a"), msgN(2, "bypass"), msgN(3, "b"), msgN(4, "bypass"))
			r.settled(4)
			dl := r.broker.DeadLetters("src", "test")
			if len(dl) != tc.bypass {
				t.Fatalf("%d dead letters, want %d", len(dl), tc.bypass)
			}
			for _, m := range dl {
				if got := m.Headers[consumer.HeaderDeadLetterReason]; got != consumer.ReasonNoClaim {
					t.Errorf("dead letter %s: reason %q, want %q", m.ID, got, consumer.ReasonNoClaim)
				}
			}
			if got := r.rec.count(consumer.OutcomeProcessed); got != 4-tc.bypass {
				t.Errorf("processed %d, want %d", got, 4-tc.bypass)
			}
			if ran.distinct() != 4 {
				t.Errorf("handler ran for %d messages, want 4", ran.distinct())
			}
			if !strings.Contains(r.logs(), "level=ERROR") || !strings.Contains(r.logs(), "without passing through a claim") {
				t.Errorf("no error log for the unclaimed messages:\n%s", r.logs())
			}
			if tc.name == "Deduplicating without a claim" {
				return
			}
			r.publish(msgN(5, "c")) // the consumer goes on
			r.settled(5)
			if got := r.rec.count(consumer.OutcomeProcessed); got != 3 {
				t.Errorf("processed %d after the dead letters, want 3", got)
			}
		})
	}
}

// TestWitnessBatch: a batch chain whose claim is skipped for some batches
// dead-letters exactly those messages with reason no-claim; a batch chain
// through Idempotency, pre-chained, is accepted and processed.
func TestWitnessBatch(t *testing.T) {
	r := newWitnessRig(t)
	bh := consumer.BatchHandlerFunc(func(context.Context, []*consumer.Message) error { return nil })
	bypass := func(idem consumer.Middleware) consumer.Middleware {
		return func(next consumer.Handler) consumer.Handler {
			claimed := idem(next).(consumer.BatchHandler)
			bnext := next.(consumer.BatchHandler)
			return consumer.BatchHandlerFunc(func(ctx context.Context, msgs []*consumer.Message) error {
				if msgs[0].Key == "bypass" {
					return bnext.HandleBatch(ctx, msgs)
				}
				return claimed.HandleBatch(ctx, msgs)
			})
		}
	}
	c, err := r.newConsumer(bh, consumer.Duplicates{}, bypass(r.idem))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	stop := startConsumer(t, c)
	r.publish(msgN(1, "bypass"))
	r.settled(1)
	r.publish(msgN(2, "a"))
	r.settled(2)
	stop()
	dl := r.broker.DeadLetters("src", "test")
	if len(dl) != 1 || dl[0].ID != msgN(1, "").ID || dl[0].Headers[consumer.HeaderDeadLetterReason] != consumer.ReasonNoClaim {
		t.Fatalf("dead letters %v, want only message 1 with reason no-claim", dl)
	}
	if got := r.rec.count(consumer.OutcomeProcessed); got != 1 {
		t.Errorf("processed %d, want 1", got)
	}

	pre := consumer.Chain(bh, passThroughBatch, r.idem)
	if _, ok := pre.(consumer.BatchHandler); !ok {
		t.Fatalf("a pre-chained BatchHandler is no longer one: %T", pre)
	}
	if _, err := r.newConsumer(pre, consumer.Duplicates{}); err != nil {
		t.Fatalf("New refused a pre-chained batch chain: %v", err)
	}
}

// passThroughBatch is a batch-capable middleware that changes nothing.
func passThroughBatch(next consumer.Handler) consumer.Handler {
	bnext := next.(consumer.BatchHandler)
	return consumer.BatchHandlerFunc(func(ctx context.Context, msgs []*consumer.Message) error { return bnext.HandleBatch(ctx, msgs) })
}

// TestWitnessClaimUnderOptOut: an opt-out whose chain claims out of New's
// sight is logged once, and messages are acked as usual.
func TestWitnessClaimUnderOptOut(t *testing.T) {
	r := newWitnessRig(t)
	ok := consumer.HandlerFunc(func(context.Context, *consumer.Message) error { return nil })
	c, err := r.newConsumer(ok, consumer.AllowDuplicates("upserts"), teamMiddleware(r.idem))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	stop := startConsumer(t, c)
	r.publish(msgN(1, "a"), msgN(2, "b"))
	r.settled(2)
	stop()
	if n := strings.Count(r.logs(), "messages pass through a claim: drop AllowDuplicates"); n != 1 {
		t.Errorf("the claim under an opt-out was logged %d times, want once:\n%s", n, r.logs())
	}
	if got := r.rec.count(consumer.OutcomeProcessed); got != 2 {
		t.Errorf("processed %d, want 2", got)
	}
}

// TestMarkClaimedAllocatesNothing: the witness costs no allocation per
// message.
func TestMarkClaimedAllocatesNothing(t *testing.T) {
	ctx := consumer.WithAttemptState(context.Background())
	if n := testing.AllocsPerRun(100, func() { consumer.MarkClaimed(ctx) }); n != 0 {
		t.Fatalf("MarkClaimed allocates %.0f times per call, want 0", n)
	}
}
