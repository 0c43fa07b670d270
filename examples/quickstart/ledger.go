package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/oncely/oncely/consumer"
)

// payment is the message body.
type payment struct {
	Account     string `json:"account"`
	AmountCents int64  `json:"amount_cents"`
}

// applied is the body of the follow-up event the ledger sends for each
// payment it applied.
type applied struct {
	Payment     string `json:"payment"`
	Account     string `json:"account"`
	AmountCents int64  `json:"amount_cents"`
}

// eventType names the follow-up event, in its "type" header.
const eventType = "ledger.applied"

// eventID is the stable ID of the event sent for payment paymentID: the same
// whichever attempt applies the payment, so a re-published copy is a
// duplicate downstream. (outbox.Send derives such IDs with outbox.DeriveID.)
func eventID(paymentID string) string { return eventType + "/" + paymentID }

// ledger is the handler's state: balances per account and its outbox, the
// follow-up events not yet published.
//
// This is the memory stand-in for package outbox: there, the
// handler's writes and outbox.Send's row join the claim's transaction, and
// the Relay publishes committed rows. The memory store cannot roll back
// (store/memory), so Handle writes the balance and the event together under
// one lock, as its last step, after everything that can fail: both or
// neither, and the store commits the claim right after. See examples/ledger
// and docs/outbox.md for the Postgres version.
type ledger struct {
	mu       sync.Mutex
	balances map[string]int64
	outbox   []*consumer.Message // in commit order
	sent     map[string]bool     // IDs in outbox that the relay marked published

	wake   chan struct{} // a commit added an event (outbox.Send's NOTIFY)
	marked chan struct{} // the relay marked events published
}

func newLedger() *ledger {
	return &ledger{
		balances: map[string]int64{},
		sent:     map[string]bool{},
		wake:     make(chan struct{}, 1),
		marked:   make(chan struct{}, 1),
	}
}

// Handle applies one payment and records its event. The poison account fails
// every time with a retryable error; a body that is not JSON is a permanent
// failure. Neither leaves a balance change or an event behind.
func (l *ledger) Handle(_ context.Context, msg *consumer.Message) error {
	var p payment
	if err := json.Unmarshal(msg.Body, &p); err != nil {
		return consumer.Permanent(fmt.Errorf("decoding payment: %w", err))
	}
	if p.Account == "poison" {
		return errors.New(`account "poison" always fails`)
	}
	body, err := json.Marshal(applied{Payment: msg.ID, Account: p.Account, AmountCents: p.AmountCents})
	if err != nil {
		return consumer.Permanent(err)
	}
	event := &consumer.Message{ID: eventID(msg.ID), Key: p.Account, Body: body, Headers: map[string]string{"type": eventType}}

	l.mu.Lock() // the "transaction": the effect and its event commit together
	l.balances[p.Account] += p.AmountCents
	l.outbox = append(l.outbox, event)
	l.mu.Unlock()
	wakeOne(l.wake)
	return nil
}

// pending returns the events not yet marked published, in commit order.
func (l *ledger) pending() []*consumer.Message {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []*consumer.Message
	for _, m := range l.outbox {
		if !l.sent[m.ID] {
			out = append(out, m)
		}
	}
	return out
}

// markPublished marks the events ids published.
func (l *ledger) markPublished(ids []string) {
	l.mu.Lock()
	for _, id := range ids {
		l.sent[id] = true
	}
	l.mu.Unlock()
	wakeOne(l.marked)
}

// waitDrained waits until every recorded event is marked published. Call it
// once no handler runs any more.
func (l *ledger) waitDrained(ctx context.Context) error {
	for len(l.pending()) > 0 {
		select {
		case <-l.marked:
		case <-ctx.Done():
			return fmt.Errorf("%d events still unpublished: %w", len(l.pending()), ctx.Err())
		}
	}
	return nil
}

// wakeOne wakes the one waiter of c, if it is not already woken.
func wakeOne(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}
