// Command quickstart shows oncely end to end with no services: a memory
// broker (mem://) and an in-memory idempotency store. It publishes six
// payments — one of them twice, one for the "poison" account that always
// fails and one that is not JSON — runs the "ledger" consumer over the
// "payments" source with short retry delays, and prints what happened:
// processed, duplicates skipped, retried, dead-lettered (with reasons) and the
// final balances. It exits by itself within a few seconds.
//
//	go run ./examples/quickstart        # -v shows the consumer's logs
//
// The same handler runs on Kafka, RabbitMQ or SQS by changing the broker URL;
// examples/ledger is the production-shaped version with Postgres.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/retry"
	"github.com/oncely/oncely/store/memory"
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

// payment is the message body.
type payment struct {
	Account     string `json:"account"`
	AmountCents int64  `json:"amount_cents"`
}

// ledger is the handler's state: balances per account. A real handler writes
// to Postgres inside the claim's transaction (see examples/ledger).
type ledger struct {
	mu       sync.Mutex
	balances map[string]int64
}

// Handle applies one payment. The poison account fails every time with a
// retryable error; a body that is not JSON is a permanent failure.
func (l *ledger) Handle(_ context.Context, msg *consumer.Message) error {
	var p payment
	if err := json.Unmarshal(msg.Body, &p); err != nil {
		return consumer.Permanent(fmt.Errorf("decoding payment: %w", err))
	}
	if p.Account == "poison" {
		return errors.New(`account "poison" always fails`)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.balances[p.Account] += p.AmountCents
	return nil
}

// tally counts the runtime's settlement events.
type tally struct {
	mu       sync.Mutex
	outcomes map[consumer.Outcome]int
	dead     []consumer.Event
	final    int
	done     chan struct{}
	want     int
}

func (t *tally) Settled(_ context.Context, ev consumer.Event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.outcomes[ev.Outcome]++
	switch ev.Outcome {
	case consumer.OutcomeProcessed, consumer.OutcomeDuplicate, consumer.OutcomeDeadLettered:
		if ev.Outcome == consumer.OutcomeDeadLettered {
			t.dead = append(t.dead, ev)
		}
		t.final++
		if t.final == t.want {
			close(t.done)
		}
	}
}

func (t *tally) BreakerChanged(bool) {}

func run(ctx context.Context, out io.Writer, verbose bool) error {
	logger := slog.New(slog.DiscardHandler)
	if verbose {
		logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	// Only this URL names the broker; "kafka://127.0.0.1:9092" or
	// "amqp://guest:guest@127.0.0.1:5672/" would run the same code.
	broker, err := adapters.Open(ctx, "mem://", adapters.WithLogger(logger))
	if err != nil {
		return err
	}
	defer broker.Close()

	msgs := []*consumer.Message{
		pay("pay-1", `{"account":"acc-17","amount_cents":250}`),
		pay("pay-2", `{"account":"acc-42","amount_cents":1000}`),
		pay("pay-3", `{"account":"acc-17","amount_cents":-100}`),
		pay("pay-1", `{"account":"acc-17","amount_cents":250}`), // the same payment again
		pay("pay-4", `{"account":"poison","amount_cents":1}`),
		pay("pay-5", `{"account":"acc-42",`), // not JSON
	}
	if err := broker.Publish(ctx, "payments", msgs...); err != nil {
		return err
	}
	fmt.Fprintf(out, "published %d messages to payments: pay-1 twice, a poison payment (pay-4) and a malformed one (pay-5)\n", len(msgs))

	src, err := broker.Source(ctx, "payments", "ledger")
	if err != nil {
		return err
	}
	claims, err := memory.New(memory.Config{})
	if err != nil {
		return err
	}
	led := &ledger{balances: map[string]int64{}}
	t := &tally{outcomes: map[consumer.Outcome]int{}, done: make(chan struct{}), want: len(msgs)}
	c, err := consumer.New(src, led, consumer.Config{
		Name:        "ledger",
		Concurrency: 4,
		// Short delays so the poison payment is dead-lettered within a second.
		Retry:    retry.Policy{MaxAttempts: 3, InitialInterval: 50 * time.Millisecond, MaxInterval: 200 * time.Millisecond},
		Logger:   logger,
		Observer: t,
	}, middleware.Idempotency(claims))
	if err != nil {
		return err
	}
	runErr := make(chan error, 1)
	go func() { runErr <- c.Run(ctx) }()
	select {
	case <-t.done:
	case <-time.After(10 * time.Second):
		return errors.Join(errors.New("the consumer did not settle every message within 10s"), c.Stop(ctx))
	case err := <-runErr:
		return fmt.Errorf("consumer stopped early: %w", err)
	}
	if err := c.Stop(ctx); err != nil {
		return err
	}

	t.mu.Lock()
	defer t.mu.Unlock()
	fmt.Fprintf(out, "processed:          %d\n", t.outcomes[consumer.OutcomeProcessed])
	fmt.Fprintf(out, "duplicates skipped: %d\n", t.outcomes[consumer.OutcomeDuplicate])
	fmt.Fprintf(out, "retried:            %d\n", t.outcomes[consumer.OutcomeRetried])
	fmt.Fprintf(out, "dead-lettered:      %d\n", t.outcomes[consumer.OutcomeDeadLettered])
	slices.SortFunc(t.dead, func(a, b consumer.Event) int { return strings.Compare(a.Message.ID, b.Message.ID) })
	for _, ev := range t.dead {
		fmt.Fprintf(out, "  %s: %s after attempt %d: %v\n", ev.Message.ID, ev.Reason, ev.Message.Attempt, ev.Err)
	}
	fmt.Fprintln(out, "balances (cents):")
	accounts := make([]string, 0, len(led.balances))
	for a := range led.balances {
		accounts = append(accounts, a)
	}
	slices.Sort(accounts)
	for _, a := range accounts {
		fmt.Fprintf(out, "  %s: %d\n", a, led.balances[a])
	}
	dl, err := broker.DeadLetters(ctx, "payments", "ledger", 0)
	if err != nil {
		return err
	}
	// A mem:// broker lives and dies with this process, so the hint names a
	// broker the CLI can reach.
	fmt.Fprintf(out, "dead-letter queue of payments/ledger holds %d messages; on a real broker (BROKER_URL=kafka://… amqp://… sqs://…) `oncely dlq redrive` moves them back\n", len(dl))
	return nil
}

func pay(id, body string) *consumer.Message {
	var p payment
	_ = json.Unmarshal([]byte(body), &p)
	return &consumer.Message{ID: id, Key: p.Account, Body: []byte(body)}
}
