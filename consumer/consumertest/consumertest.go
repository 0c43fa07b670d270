// Package consumertest helps teams prove, in their own tests, that a handler
// survives redelivery, as net/http/httptest helps test HTTP handlers.
//
// Brokers deliver at least once: a message comes again after a crash, a lost
// ack or a rebalance, two copies can run at the same time on two consumers,
// and a failed attempt is retried. Redelivery replays those cases against a
// handler chain (typically the business handler wrapped in
// middleware.Idempotency) and checks that the message's effect was applied
// exactly once each time:
//
//	func TestLedgerSurvivesRedelivery(t *testing.T) {
//		consumertest.Redelivery{
//			Setup: func(fault consumer.Middleware) (consumer.Handler, func() int) {
//				db := newTestDB(t) // fresh state for every scenario
//				h := consumer.Chain(ledger.Handler(db), middleware.Idempotency(db.Claims()), fault)
//				return h, func() int { return db.CountCredits() }
//			},
//		}.Run(t, consumertest.NewMessage("payment-1", []byte(`{"amount":10}`)))
//	}
//
// Idempotent is the one-call form for a handler and a store.Store: it wires
// the handler inside middleware.Idempotency itself and plays four cases —
// delivered twice, delivered concurrently, after a failed attempt, and a
// crash after the commit but before the ack — counting effects per message
// ID with the caller's Effects func:
//
//	consumertest.Idempotent(t, ledgerHandler, pgStore, consumertest.NewMessage("pay-1", body), countEntries)
package consumertest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oncely/oncely/consumer"
)

// Defaults applied to zero fields of Redelivery.
const (
	ConsumerDefault    = "consumertest"
	ConcurrencyDefault = 8
	TimeoutDefault     = 10 * time.Second
)

// ErrInjected is the error the fault middleware returns for the failed attempt
// of the failure scenarios.
var ErrInjected = errors.New("consumertest: injected failure")

// NewMessage returns a message as a broker delivers it the first time: the
// given ID and body, Attempt 1, Partition and Offset -1 (no broker
// coordinates), Source "consumertest", the ID also in the message-id header,
// and Timestamp now. Change fields freely; it is a fresh value.
func NewMessage(id string, body []byte) *consumer.Message {
	return &consumer.Message{
		ID:        id,
		Body:      body,
		Headers:   map[string]string{consumer.HeaderMessageID: id},
		Source:    "consumertest",
		Attempt:   1,
		Partition: -1,
		Offset:    -1,
		Timestamp: time.Now(),
	}
}

// AttemptContext returns ctx as the Consumer runtime prepares it for one
// attempt: it carries consumerName (consumer.WithName) and can record a
// duplicate (consumer.WithAttemptState). Use it to call a handler chain
// directly.
func AttemptContext(ctx context.Context, consumerName string) context.Context {
	return consumer.WithAttemptState(consumer.WithName(ctx, consumerName))
}

// Redelivery checks that a handler chain applies a message's effect exactly
// once when the message is delivered again. Run (or Check) plays these
// scenarios, each on a fresh chain from Setup, and after each one expects
// effects() == 1 and every delivery but the injected failure to return nil:
//
//   - redelivered: the message is delivered, then delivered again (a lost ack);
//   - concurrent: Concurrency copies are delivered at the same time (two
//     consumers got the same message);
//   - after failure: the first attempt fails inside the chain (the fault
//     middleware returns ErrInjected before calling the handler), must leave
//     no effect, and the redelivery must apply it (the failure must not leave
//     a claim behind); a third delivery must then not apply it again;
//   - failure after effect, only with FailAfterEffect: as above, but the
//     fault lets the handler run and then fails the attempt, so the effect
//     must be rolled back with the claim.
//
// Each delivery carries the next attempt number, and the chain is called as
// the runtime calls it: with consumer.Recover outermost and a context from
// AttemptContext.
type Redelivery struct {
	// Setup returns a fresh handler chain and a func reporting how many times
	// the message's effect has been applied so far. It is called once per
	// scenario and must reset all state (database rows, idempotency claims,
	// counters) so effects() starts at 0. Place fault in the chain where a
	// failure should strike, normally innermost, around the business handler
	// and inside the idempotency middleware. Required.
	Setup func(fault consumer.Middleware) (h consumer.Handler, effects func() int)

	// Consumer is the consumer name put in each attempt's context; claims are
	// keyed by it. Defaults to ConsumerDefault ("consumertest").
	Consumer string

	// Concurrency is the number of copies delivered at once in the
	// concurrent scenario. Defaults to ConcurrencyDefault (8).
	Concurrency int

	// FailAfterEffect adds the scenario in which the failure strikes after
	// the handler applied its effect. Only a store that commits the claim and
	// the effect together can pass it (store/postgres with the effect written
	// in the claim's transaction); the in-memory store cannot undo effects.
	// Defaults to false.
	FailAfterEffect bool

	// Timeout bounds each scenario; a delivery still running after it is
	// reported as hung. Defaults to TimeoutDefault (10s).
	Timeout time.Duration
}

// Run plays the scenarios with Check and, when any failed, reports them with
// one t.Error listing every broken scenario, so a test sees them all at once.
func (r Redelivery) Run(t testing.TB, msg *consumer.Message) {
	t.Helper()
	if err := r.Check(t.Context(), msg); err != nil {
		t.Error(err)
	}
}

// Check plays the scenarios and returns nil when all of them held, or an
// error listing each failed scenario. It returns an error at once when the
// Redelivery or msg is unusable.
func (r Redelivery) Check(ctx context.Context, msg *consumer.Message) error {
	if r.Setup == nil {
		return errors.New("consumertest: Redelivery.Setup is required")
	}
	if msg == nil {
		return errors.New("consumertest: nil message")
	}
	if r.Consumer == "" {
		r.Consumer = ConsumerDefault
	}
	if r.Concurrency == 0 {
		r.Concurrency = ConcurrencyDefault
	}
	if r.Timeout == 0 {
		r.Timeout = TimeoutDefault
	}
	if r.Concurrency < 2 {
		return fmt.Errorf("consumertest: Concurrency must be >= 2, got %d", r.Concurrency)
	}
	if r.Timeout < 0 {
		return fmt.Errorf("consumertest: Timeout must be > 0, got %s", r.Timeout)
	}
	type step struct {
		name       string
		faultAfter bool
		run        func(context.Context, *scenario) error
	}
	scenarios := []step{
		{"redelivered", false, r.redelivered},
		{"concurrent", false, r.concurrent},
		{"after failure", false, r.afterFailure},
	}
	if r.FailAfterEffect {
		scenarios = append(scenarios, step{"failure after effect", true, r.afterFailure})
	}
	var errs []error
	for _, sc := range scenarios {
		f := &fault{after: sc.faultAfter}
		h, effects := r.Setup(f.middleware)
		if h == nil || effects == nil {
			return errors.New("consumertest: Setup returned a nil handler or effects func")
		}
		s := &scenario{r: r, h: consumer.Recover(h), effects: effects, fault: f, msg: msg}
		sctx, cancel := context.WithTimeout(ctx, r.Timeout)
		err := func() error {
			if n := effects(); n != 0 {
				return fmt.Errorf("the Setup func must return fresh state, but effects() = %d before any delivery", n)
			}
			return sc.run(sctx, s)
		}()
		cancel()
		if err != nil {
			errs = append(errs, fmt.Errorf("consumertest: %s: %w", sc.name, err))
		}
	}
	return errors.Join(errs...)
}

// scenario is one scenario's fresh chain and its delivery counter.
type scenario struct {
	r       Redelivery
	h       consumer.Handler
	effects func() int
	fault   *fault
	msg     *consumer.Message
	attempt int
}

// next returns the next delivered copy of the message.
func (s *scenario) next() *consumer.Message {
	c := s.msg.Clone()
	s.attempt++
	c.Attempt = max(s.msg.Attempt, 1) + s.attempt - 1
	return c
}

// deliver delivers copies concurrently and returns each one's result, or an
// error when some did not return before ctx ended.
func (s *scenario) deliver(ctx context.Context, copies int) ([]error, error) {
	results := make([]error, copies)
	msgs := make([]*consumer.Message, copies)
	for i := range msgs {
		msgs[i] = s.next()
	}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range copies {
		wg.Go(func() {
			<-start
			results[i] = s.h.Handle(AttemptContext(ctx, s.r.Consumer), msgs[i])
		})
	}
	close(start)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return results, nil
	case <-ctx.Done():
	}
	grace := time.NewTimer(time.Second)
	defer grace.Stop()
	select {
	case <-done:
		return results, nil
	case <-grace.C:
		return nil, fmt.Errorf("deliveries still running %s after the scenario's timeout; does the handler honour its context?", time.Second)
	}
}

func (s *scenario) deliverOK(ctx context.Context, what string) error {
	res, err := s.deliver(ctx, 1)
	if err != nil {
		return err
	}
	if res[0] != nil {
		return fmt.Errorf("%s returned %w, want nil (a redelivery must be acked, not retried)", what, res[0])
	}
	return nil
}

func (s *scenario) wantEffects(want int, when string) error {
	if n := s.effects(); n != want {
		return fmt.Errorf("effect applied %d times %s, want %d", n, when, want)
	}
	return nil
}

func (r Redelivery) redelivered(ctx context.Context, s *scenario) error {
	if err := s.deliverOK(ctx, "the first delivery"); err != nil {
		return err
	}
	if err := s.wantEffects(1, "after the first delivery"); err != nil {
		return err
	}
	if err := s.deliverOK(ctx, "the second delivery"); err != nil {
		return err
	}
	return s.wantEffects(1, "after the message was delivered twice")
}

func (r Redelivery) concurrent(ctx context.Context, s *scenario) error {
	res, err := s.deliver(ctx, r.Concurrency)
	if err != nil {
		return err
	}
	var errs []error
	for i, e := range res {
		if e != nil {
			errs = append(errs, fmt.Errorf("copy %d returned %w, want nil", i+1, e))
		}
	}
	if err := s.wantEffects(1, fmt.Sprintf("after %d concurrent deliveries", r.Concurrency)); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (r Redelivery) afterFailure(ctx context.Context, s *scenario) error {
	s.fault.armed.Store(true)
	res, err := s.deliver(ctx, 1)
	if err != nil {
		return err
	}
	if s.fault.fired.Load() == 0 {
		return errors.New("the fault middleware passed to Setup is not in the returned chain (or the chain never reached it)")
	}
	if !errors.Is(res[0], ErrInjected) {
		return fmt.Errorf("the failed attempt returned %v, want an error wrapping ErrInjected", res[0])
	}
	if err := s.wantEffects(0, "after a failed attempt (its effect must not persist)"); err != nil {
		return err
	}
	if err := s.deliverOK(ctx, "the redelivery after the failure"); err != nil {
		return err
	}
	if err := s.wantEffects(1, "after the redelivery that followed a failed attempt (did the failure leave a claim behind?)"); err != nil {
		return err
	}
	if err := s.deliverOK(ctx, "a third delivery"); err != nil {
		return err
	}
	return s.wantEffects(1, "after a third delivery")
}

// fault fails the one attempt it is armed for with ErrInjected: before
// calling the next handler, or after it when after is set.
type fault struct {
	after bool
	armed atomic.Bool
	fired atomic.Int32
}

func (f *fault) middleware(next consumer.Handler) consumer.Handler {
	return consumer.HandlerFunc(func(ctx context.Context, msg *consumer.Message) error {
		if !f.armed.CompareAndSwap(true, false) {
			return next.Handle(ctx, msg)
		}
		f.fired.Add(1)
		if f.after {
			if err := next.Handle(ctx, msg); err != nil {
				return fmt.Errorf("handler failed before the injected failure: %w", err)
			}
			return fmt.Errorf("after the handler succeeded: %w", ErrInjected)
		}
		return fmt.Errorf("before the handler ran: %w", ErrInjected)
	})
}
