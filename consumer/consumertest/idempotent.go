package consumertest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store"
)

// The cases Idempotent plays, as its reports name them.
const (
	CaseTwice      = "delivered twice"
	CaseConcurrent = "delivered concurrently"
	CaseFailed     = "after a failed attempt"
	CaseCrash      = "crash after commit, before the ack"
)

// Effects reports how many times the effect of the message with ID
// messageID has been applied so far, as the handler's own storage shows it
// (for example SELECT count(*) FROM ledger_entries WHERE message_id = $1,
// read outside any handler). Idempotent gives every case its own message ID,
// so the handler must key its effect by Message.ID.
type Effects func(ctx context.Context, messageID string) (int, error)

// Idempotent checks, in one call, that h wired as in production — inside
// middleware.Idempotency(s), with consumer.Recover outermost, called with
// the context the runtime gives an attempt — applies a message's effect
// exactly once in each case a platform team needs (see CheckIdempotent). It
// reports every broken case with one t.Error, naming it and listing the
// effect counts it saw against those it wanted.
//
//	consumertest.Idempotent(t, ledgerHandler, pgStore, consumertest.NewMessage("pay-1", body), countEntries)
func Idempotent(t testing.TB, h consumer.Handler, s store.Store, msg *consumer.Message, effects Effects) {
	t.Helper()
	if err := CheckIdempotent(t.Context(), h, s, msg, effects); err != nil {
		t.Error(err)
	}
}

// CheckIdempotent plays four cases against h and s and returns nil when
// the effect was applied exactly once in each, or an error naming every
// broken case. Each case delivers a copy of msg with its own message ID
// (msg.ID, the case and a per-call nonce; so a database kept between runs
// needs no cleaning), under consumer name ConsumerDefault, with Attempt
// rising per delivery:
//
//   - CaseTwice: delivered, then delivered again (a lost ack); both must
//     return nil; effect counts 1, 1.
//   - CaseConcurrent: ConcurrencyDefault (8) copies at once (two consumers
//     got the message); all must return nil; effect count 1.
//   - CaseFailed: the first attempt fails after h returned nil, inside the
//     claim's unit of work (a later middleware, a timeout, a failed
//     commit), so its effect must roll back with the claim; the redelivery
//     applies it, a third delivery does not; effect counts 0, 1, 1. Only
//     a store that commits h's effects with the claim (store/postgres, with
//     h writing through postgres.Tx) passes it: a write through the pool,
//     or store/memory, which cannot undo effects, is reported here.
//   - CaseCrash: the first delivery commits, then the process dies before
//     the ack: its context is cancelled as the chain returns and the ack
//     never happens; a restarted process (a new chain around the same h and
//     s) gets the redelivery, which must return nil without applying the
//     effect again; effect counts 1, 1. The store must outlive the process,
//     as Postgres does.
//
// Every case runs within TimeoutDefault; a delivery still running then is
// reported as hung. It returns an error at once when an argument is nil.
func CheckIdempotent(ctx context.Context, h consumer.Handler, s store.Store, msg *consumer.Message, effects Effects) error {
	switch {
	case h == nil:
		return errors.New("consumertest: Idempotent: nil handler")
	case s == nil:
		return errors.New("consumertest: Idempotent: nil store")
	case msg == nil:
		return errors.New("consumertest: Idempotent: nil message")
	case effects == nil:
		return errors.New("consumertest: Idempotent: nil Effects func")
	}
	nonce := strconv.FormatInt(time.Now().UnixNano(), 36)
	cases := []struct {
		name string
		run  func(*idemCase, context.Context) error
	}{
		{CaseTwice, (*idemCase).twice},
		{CaseConcurrent, (*idemCase).concurrent},
		{CaseFailed, (*idemCase).failed},
		{CaseCrash, (*idemCase).crash},
	}
	var errs []error
	for i, tc := range cases {
		m := msg.Clone()
		m.ID = fmt.Sprintf("%s.%d.%s", msg.ID, i+1, nonce)
		if m.Headers != nil {
			if _, ok := m.Headers[consumer.HeaderMessageID]; ok {
				m.Headers[consumer.HeaderMessageID] = m.ID
			}
		}
		c := &idemCase{h: h, s: s, msg: m, effects: effects, first: max(msg.Attempt, 1)}
		cctx, cancel := context.WithTimeout(ctx, TimeoutDefault)
		err := tc.run(c, cctx)
		cancel()
		if err != nil {
			errs = append(errs, fmt.Errorf("consumertest: case %q (message %s): %w", tc.name, m.ID, err))
		}
	}
	return errors.Join(errs...)
}

// idemCase is one case's message, chain and effect counts.
type idemCase struct {
	h        consumer.Handler
	s        store.Store
	msg      *consumer.Message
	effects  Effects
	first    int // the first delivery's attempt number
	attempts int
	fail     atomic.Bool // the next attempt fails after the handler succeeded
	got      []int       // effect counts after each step
	want     []int
}

// chain returns h as a process wires it: Recover(Idempotency(s)(fault(h))).
func (c *idemCase) chain() consumer.Handler {
	fault := func(next consumer.Handler) consumer.Handler {
		return consumer.HandlerFunc(func(ctx context.Context, m *consumer.Message) error {
			if err := next.Handle(ctx, m); err != nil {
				return err
			}
			if c.fail.CompareAndSwap(true, false) {
				return fmt.Errorf("after the handler succeeded: %w", ErrInjected)
			}
			return nil
		})
	}
	return consumer.Recover(middleware.Idempotency(c.s)(fault(c.h)))
}

// deliver hands copies of the message to chain at once and returns their
// results, or an error when some are still running when ctx ends.
func (c *idemCase) deliver(ctx context.Context, chain consumer.Handler, dctx context.Context, copies int) ([]error, error) {
	res := make([]error, copies)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range copies {
		m := c.msg.Clone()
		m.Attempt = c.first + c.attempts
		c.attempts++
		wg.Go(func() {
			<-start
			res[i] = chain.Handle(AttemptContext(dctx, ConsumerDefault), m)
		})
	}
	close(start)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return res, nil
	case <-ctx.Done():
		return nil, errors.New("deliveries still running at the case's timeout: does the handler honour its context, or wait for a resource its concurrent copies hold (a pool connection, while they wait on the claim)?")
	}
}

// step delivers copies, checks that each returned nil (unless failing),
// and records the effect count against want.
func (c *idemCase) step(ctx, dctx context.Context, chain consumer.Handler, copies, want int, failing bool) error {
	res, err := c.deliver(ctx, chain, dctx, copies)
	if err != nil {
		return err
	}
	for i, e := range res {
		switch {
		case failing && !errors.Is(e, ErrInjected):
			return fmt.Errorf("the failed attempt returned %v, want the injected failure", e)
		case !failing && e != nil:
			return fmt.Errorf("delivery %d returned %w, want nil (a copy must be processed or skipped as a duplicate, then acked)", c.attempts-copies+i+1, e)
		}
	}
	n, err := c.effects(ctx, c.msg.ID)
	if err != nil {
		return fmt.Errorf("counting effects: %w", err)
	}
	c.got, c.want = append(c.got, n), append(c.want, want)
	return nil
}

// verdict reports the counts when they differ from the wanted ones.
func (c *idemCase) verdict(what string) error {
	if slices.Equal(c.got, c.want) {
		return nil
	}
	return fmt.Errorf("effect applied %v times %s, want %v: not exactly once", c.got, what, c.want)
}

func (c *idemCase) twice(ctx context.Context) error {
	chain := c.chain()
	for range 2 {
		if err := c.step(ctx, ctx, chain, 1, 1, false); err != nil {
			return err
		}
	}
	return c.verdict("after the first and the second delivery")
}

func (c *idemCase) concurrent(ctx context.Context) error {
	if err := c.step(ctx, ctx, c.chain(), ConcurrencyDefault, 1, false); err != nil {
		return err
	}
	return c.verdict(fmt.Sprintf("after %d concurrent copies", ConcurrencyDefault))
}

func (c *idemCase) failed(ctx context.Context) error {
	chain := c.chain()
	c.fail.Store(true)
	if err := c.step(ctx, ctx, chain, 1, 0, true); err != nil {
		return err
	}
	for range 2 {
		if err := c.step(ctx, ctx, chain, 1, 1, false); err != nil {
			return err
		}
	}
	return c.verdict("after the failed attempt, its redelivery and a third delivery (an effect outside the claim's unit of work survives the failure)")
}

func (c *idemCase) crash(ctx context.Context) error {
	dying, die := context.WithCancel(ctx)
	err := c.step(ctx, dying, c.chain(), 1, 1, false)
	die() // the process is gone: nothing of it runs on, its ack never happens
	if err != nil {
		return err
	}
	if err := c.step(ctx, ctx, c.chain(), 1, 1, false); err != nil {
		return err
	}
	return c.verdict("after the committed delivery and the redelivery to the restarted process")
}
