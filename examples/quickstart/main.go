// Command quickstart shows oncely end to end with no services: a memory
// broker (mem://) and an in-memory idempotency store. It publishes six
// payments — one of them twice, one for the "poison" account that always
// fails and one that is not JSON — and runs the "ledger" consumer over the
// "payments" source with short retry delays. The ledger records a
// "ledger.applied" event with each payment it applies, in the same unit as
// the balance change (the outbox pattern); a relay publishes the recorded
// events to "notifications", losing one mark on purpose so one event goes
// out twice, and the "notifier" consumer, behind its own claims, notifies
// once per event. It prints what happened — processed, duplicates skipped,
// retried, dead-lettered (with reasons), the final balances and each event's
// path — and exits by itself within a few seconds.
//
//	go run ./examples/quickstart        # -v shows the consumer's logs
//
// The same handlers run on Kafka, RabbitMQ or SQS by changing the broker URL;
// examples/ledger is the production-shaped version with Postgres, and
// package outbox is the real outbox (outbox.Send in the claim's
// transaction, outbox.Relay or `oncely relay`).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strings"

	"github.com/oncely/oncely/consumer"
)

func main() {
	verbose := flag.Bool("v", false, "print the consumer's logs to stderr")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Stdout, *verbose); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out io.Writer, verbose bool) error {
	logger := slog.New(slog.DiscardHandler)
	if verbose {
		logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	// The relay loses the first mark of this event on purpose, as a crash
	// right after the broker confirmed it would.
	lostMark := eventID("pay-1")
	rep, err := pipeline(ctx, logger, payments(), lostMark)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "published %d messages to payments: pay-1 twice, a poison payment (pay-4) and a malformed one (pay-5)\n", rep.payments)
	led := rep.ledger
	fmt.Fprintf(out, "processed:          %d\n", led.outcomes[consumer.OutcomeProcessed])
	fmt.Fprintf(out, "duplicates skipped: %d\n", led.outcomes[consumer.OutcomeDuplicate])
	fmt.Fprintf(out, "retried:            %d\n", led.outcomes[consumer.OutcomeRetried])
	fmt.Fprintf(out, "dead-lettered:      %d\n", led.outcomes[consumer.OutcomeDeadLettered])
	slices.SortFunc(led.dead, func(a, b consumer.Event) int { return strings.Compare(a.Message.ID, b.Message.ID) })
	for _, ev := range led.dead {
		fmt.Fprintf(out, "  %s: %s after attempt %d: %v\n", ev.Message.ID, ev.Reason, ev.Message.Attempt, ev.Err)
	}
	fmt.Fprintln(out, "balances (cents):")
	for _, a := range slices.Sorted(maps.Keys(rep.balances)) {
		fmt.Fprintf(out, "  %s: %d\n", a, rep.balances[a])
	}
	// A mem:// broker lives and dies with this process, so the hint names a
	// broker the CLI can reach.
	fmt.Fprintf(out, "dead-letter queue of payments/ledger holds %d messages; on a real broker (BROKER_URL=kafka://… amqp://… sqs://…) `oncely dlq redrive` moves them back\n", rep.deadLetters)

	total := 0
	for _, n := range rep.publishes {
		total += n
	}
	fmt.Fprintf(out, "outbox: the ledger recorded %d events, each with its payment's effect and claim\n", len(rep.events))
	fmt.Fprintf(out, "relay: %d publishes to notifications; the mark of %s was lost once, as in a crash after Publish, so it went out again\n", total, lostMark)
	for _, id := range rep.events {
		fmt.Fprintf(out, "  event %s → notifier: %s (published %d×, notified %d×)\n",
			strings.Replace(id, "/", " ", 1), rep.notes[id], rep.publishes[id], rep.notified[id])
	}
	nt := rep.notifier
	fmt.Fprintf(out, "notifier: processed %d, duplicates skipped %d\n", nt.outcomes[consumer.OutcomeProcessed], nt.outcomes[consumer.OutcomeDuplicate])
	return nil
}

// payments are the messages the quickstart publishes.
func payments() []*consumer.Message {
	return []*consumer.Message{
		pay("pay-1", `{"account":"acc-17","amount_cents":250}`),
		pay("pay-2", `{"account":"acc-42","amount_cents":1000}`),
		pay("pay-3", `{"account":"acc-17","amount_cents":-100}`),
		pay("pay-1", `{"account":"acc-17","amount_cents":250}`), // the same payment again
		pay("pay-4", `{"account":"poison","amount_cents":1}`),
		pay("pay-5", `{"account":"acc-42",`), // not JSON
	}
}

func pay(id, body string) *consumer.Message {
	var p payment
	_ = json.Unmarshal([]byte(body), &p)
	return &consumer.Message{ID: id, Key: p.Account, Body: []byte(body)}
}
