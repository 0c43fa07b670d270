package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The quickstart's whole run: every outcome counted, the poison and the
// malformed payment dead-lettered with their reasons, pay-1 applied once,
// one event per applied payment, the re-published event notified once.
func Example() {
	if err := run(context.Background(), os.Stdout, false); err != nil {
		fmt.Println("error:", err)
	}
	// Output:
	// published 6 messages to payments: pay-1 twice, a poison payment (pay-4) and a malformed one (pay-5)
	// processed:          3
	// duplicates skipped: 1
	// retried:            2
	// dead-lettered:      2
	//   pay-4: exhausted after attempt 3: account "poison" always fails
	//   pay-5: permanent after attempt 1: permanent: decoding payment: unexpected end of JSON input
	// balances (cents):
	//   acc-17: 150
	//   acc-42: 1000
	// dead-letter queue of payments/ledger holds 2 messages; on a real broker (BROKER_URL=kafka://… amqp://… sqs://…) `oncely dlq redrive` moves them back
	// outbox: the ledger recorded 3 events, each with its payment's effect and claim
	// relay: 4 publishes to notifications; the mark of ledger.applied/pay-1 was lost once, as in a crash after Publish, so it went out again
	//   event ledger.applied pay-1 → notifier: acc-17 +250 (published 2×, notified 1×)
	//   event ledger.applied pay-2 → notifier: acc-42 +1000 (published 1×, notified 1×)
	//   event ledger.applied pay-3 → notifier: acc-17 -100 (published 1×, notified 1×)
	// notifier: processed 3, duplicates skipped 1
}

// TestNotifierGetsEachEventOnce: the ledger records exactly one event per
// applied payment (none for the duplicate delivery of pay-1, the poison or
// the malformed payment), the relay publishes each event once plus once per
// lost mark, and the notifier notifies once per event however many copies
// arrive. Catches: a notifier without its claims (it notifies a re-published
// event twice), an event recorded by a failed or duplicate attempt, a relay
// that drops an event whose mark was lost.
func TestNotifierGetsEachEventOnce(t *testing.T) {
	events := []string{eventID("pay-1"), eventID("pay-2"), eventID("pay-3")}
	for name, lost := range map[string][]string{
		"no mark lost":          nil,
		"one event twice":       {eventID("pay-1")},
		"every event published": events,
	} {
		t.Run(name, func(t *testing.T) {
			rep, err := pipeline(context.Background(), slog.New(slog.DiscardHandler), payments(), lost...)
			require.NoError(t, err)
			require.Equal(t, events, rep.events, "one event per applied payment")
			wantPub, wantNotified := map[string]int{}, map[string]int{}
			for _, id := range events {
				wantPub[id], wantNotified[id] = 1, 1
			}
			for _, id := range lost {
				wantPub[id]++
			}
			require.Equal(t, wantPub, rep.publishes, "the relay publishes again what it did not mark")
			require.Equal(t, wantNotified, rep.notified, "the notifier notifies each event once")
			require.Equal(t, map[string]string{
				eventID("pay-1"): "acc-17 +250", eventID("pay-2"): "acc-42 +1000", eventID("pay-3"): "acc-17 -100",
			}, rep.notes, "each notification carries its payment")
			require.Equal(t, map[string]int64{"acc-17": 150, "acc-42": 1000}, rep.balances)
			require.Equal(t, len(events), rep.notifier.outcomes[consumer.OutcomeProcessed])
			require.Equal(t, len(lost), rep.notifier.outcomes[consumer.OutcomeDuplicate])
		})
	}
}

// flakyBroker fails Publish while fail is set.
type flakyBroker struct {
	adapters.Broker
	fail bool
	sent int
}

func (b *flakyBroker) Publish(_ context.Context, _ string, msgs ...*consumer.Message) error {
	if b.fail {
		return errors.New("broker down")
	}
	b.sent += len(msgs)
	return nil
}

// TestRelayMarksOnlyAfterPublish: a failed Publish marks nothing, so the
// next round publishes the same events. Catches: a relay that marks before
// (or regardless of) Publish, which loses the events on a broker failure.
func TestRelayMarksOnlyAfterPublish(t *testing.T) {
	led := newLedger()
	for _, m := range payments()[:3] {
		require.NoError(t, led.Handle(context.Background(), m))
	}
	b := &flakyBroker{fail: true}
	r := &relay{outbox: led, broker: b, destination: "notifications", logger: slog.New(slog.DiscardHandler),
		loseMark: map[string]bool{}, publishes: map[string]int{}}

	n, err := r.round(context.Background())
	require.Error(t, err)
	require.Zero(t, n)
	require.Len(t, led.pending(), 3, "nothing marked while the broker is down")

	b.fail = false
	n, err = r.round(context.Background())
	require.NoError(t, err)
	require.Equal(t, 3, n)
	require.Equal(t, 3, b.sent)
	require.Empty(t, led.pending())
}
