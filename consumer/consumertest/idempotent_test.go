package consumertest_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/consumer/consumertest"
	"github.com/oncely/oncely/store/memory"
)

// effectLog counts effects per message ID.
type effectLog struct {
	mu sync.Mutex
	n  map[string]int
}

func newEffectLog() *effectLog { return &effectLog{n: map[string]int{}} }

func (l *effectLog) add(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n[id]++
}

func (l *effectLog) count(_ context.Context, id string) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n[id], nil
}

// stagingStore is an in-memory store.Store that, like store/postgres,
// commits a handler's effects with its claim: the handler stages them in
// the context's unit of work, and only a nil result applies them.
type stagingStore struct {
	mem *memory.Store
	log *effectLog
}

type unitKey struct{}

func (s *stagingStore) Process(ctx context.Context, name, id string, fn func(context.Context) error) (bool, error) {
	var staged []string
	return s.mem.Process(ctx, name, id, func(ctx context.Context) error {
		if err := fn(context.WithValue(ctx, unitKey{}, &staged)); err != nil {
			return err // rolled back
		}
		for _, e := range staged {
			s.log.add(e)
		}
		return nil
	})
}

func memStore(t *testing.T) *memory.Store {
	s, err := memory.New(memory.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestIdempotentPassesTransactionalHandler: a handler whose effect commits
// with the claim passes all four cases.
func TestIdempotentPassesTransactionalHandler(t *testing.T) {
	log := newEffectLog()
	s := &stagingStore{mem: memStore(t), log: log}
	h := consumer.HandlerFunc(func(ctx context.Context, m *consumer.Message) error {
		unit := ctx.Value(unitKey{}).(*[]string)
		*unit = append(*unit, m.ID)
		return nil
	})
	if err := consumertest.CheckIdempotent(context.Background(), h, s, consumertest.NewMessage("pay-1", nil), log.count); err != nil {
		t.Fatal(err)
	}
	consumertest.Idempotent(t, h, s, consumertest.NewMessage("pay-1", nil), log.count)
}

// TestIdempotentMemoryStore: with store/memory, which cannot undo effects,
// the handler passes every case but the failed attempt, which is reported
// by name with its counts.
func TestIdempotentMemoryStore(t *testing.T) {
	log := newEffectLog()
	h := consumer.HandlerFunc(func(_ context.Context, m *consumer.Message) error {
		log.add(m.ID)
		return nil
	})
	err := consumertest.CheckIdempotent(context.Background(), h, memStore(t), consumertest.NewMessage("pay-1", nil), log.count)
	if err == nil {
		t.Fatal("the failed attempt's effect survived, yet nothing was reported")
	}
	msg := err.Error()
	if strings.Count(msg, "consumertest: case") != 1 || !strings.Contains(msg, `case "after a failed attempt"`) ||
		!strings.Contains(msg, "effect applied [1 2 2] times") || !strings.Contains(msg, "want [0 1 1]") {
		t.Fatalf("report %q, want only the failed attempt's case with counts [1 2 2] against [0 1 1]", msg)
	}
}

// TestIdempotentReportsFailingHandler: a handler that always fails is
// reported in every case, with the delivery's error.
func TestIdempotentReportsFailingHandler(t *testing.T) {
	h := consumer.HandlerFunc(func(context.Context, *consumer.Message) error { return fmt.Errorf("database down") })
	err := consumertest.CheckIdempotent(context.Background(), h, memStore(t), consumertest.NewMessage("pay-1", nil), newEffectLog().count)
	if err == nil {
		t.Fatal("nothing reported")
	}
	for _, c := range []string{consumertest.CaseTwice, consumertest.CaseConcurrent, consumertest.CaseFailed, consumertest.CaseCrash} {
		if !strings.Contains(err.Error(), `case "`+c+`"`) {
			t.Errorf("case %q not reported in %v", c, err)
		}
	}
	if !strings.Contains(err.Error(), "database down") {
		t.Errorf("the handler's error is not in %v", err)
	}
}

func TestIdempotentValidates(t *testing.T) {
	h := consumer.HandlerFunc(func(context.Context, *consumer.Message) error { return nil })
	if err := consumertest.CheckIdempotent(context.Background(), h, nil, consumertest.NewMessage("m", nil), newEffectLog().count); err == nil || !strings.Contains(err.Error(), "nil store") {
		t.Fatalf("nil store: %v", err)
	}
	if err := consumertest.CheckIdempotent(context.Background(), h, memStore(t), consumertest.NewMessage("m", nil), nil); err == nil || !strings.Contains(err.Error(), "nil Effects") {
		t.Fatalf("nil effects: %v", err)
	}
}

// CheckIdempotent names the cases that broke. Here the handler counts its
// effect in memory next to store/memory's claims: redelivered, concurrent
// and crashed copies are skipped as duplicates, but the memory store cannot
// undo an effect when the attempt fails after the handler ran, so that case
// applies it twice. With store/postgres and the effect written through
// postgres.Tx, all four hold.
func ExampleCheckIdempotent() {
	claims, err := memory.New(memory.Config{})
	if err != nil {
		panic(err)
	}
	applied := newEffectLog()
	h := consumer.HandlerFunc(func(_ context.Context, m *consumer.Message) error {
		applied.add(m.ID)
		return nil
	})
	err = consumertest.CheckIdempotent(context.Background(), h, claims, consumertest.NewMessage("pay-1", []byte(`{"amount":10}`)), applied.count)
	for _, c := range []string{consumertest.CaseTwice, consumertest.CaseConcurrent, consumertest.CaseFailed, consumertest.CaseCrash} {
		verdict := "exactly once"
		if err != nil && strings.Contains(err.Error(), `case "`+c+`"`) {
			verdict = "BROKEN"
		}
		fmt.Printf("%s: %s\n", c, verdict)
	}
	// Output:
	// delivered twice: exactly once
	// delivered concurrently: exactly once
	// after a failed attempt: BROKEN
	// crash after commit, before the ack: exactly once
}
