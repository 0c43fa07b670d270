package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/retry"
	"github.com/oncely/oncely/store/memory"
)

// report is what one pipeline run did.
type report struct {
	payments         int
	ledger, notifier *tally
	balances         map[string]int64
	deadLetters      int               // in payments/ledger's dead-letter queue
	events           []string          // IDs of the events the ledger recorded, sorted
	publishes        map[string]int    // relay publishes per event ID
	notified         map[string]int    // notifications per event ID
	notes            map[string]string // what each notification said
}

// pipeline publishes msgs to "payments" and runs everything on one mem://
// broker and one memory claim store until every message and event has
// settled: the ledger consumer, the relay (losing the first mark of each
// event in loseMark) and the notifier consumer over "notifications".
func pipeline(ctx context.Context, logger *slog.Logger, msgs []*consumer.Message, loseMark ...string) (*report, error) {
	// Only this URL names the broker; "kafka://127.0.0.1:9092" or
	// "amqp://guest:guest@127.0.0.1:5672/?prefetch=32" would run the same
	// code (a RabbitMQ prefetch must fit MaxInFlight, 8 × Concurrency here).
	broker, err := adapters.Open(ctx, "mem://", adapters.WithLogger(logger))
	if err != nil {
		return nil, err
	}
	defer broker.Close()
	if err := broker.Publish(ctx, "payments", msgs...); err != nil {
		return nil, err
	}
	// One claim store for both consumers: claims are per consumer name, so
	// the notifier's claims are its own.
	claims, err := memory.New(memory.Config{})
	if err != nil {
		return nil, err
	}
	wait, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()

	led, ledTally := newLedger(), newTally()
	ledC, err := start(ctx, broker, "payments", led, consumer.Config{
		Name:        "ledger",
		Concurrency: 4,
		// Short delays so the poison payment is dead-lettered within a second.
		Retry:    retry.Policy{MaxAttempts: 3, InitialInterval: 50 * time.Millisecond, MaxInterval: 200 * time.Millisecond},
		Logger:   logger,
		Observer: ledTally,
	}, middleware.Idempotency(claims))
	if err != nil {
		return nil, err
	}
	defer ledC.stop(ctx)

	rel := &relay{outbox: led, broker: broker, destination: "notifications", logger: logger,
		loseMark: map[string]bool{}, publishes: map[string]int{}}
	for _, id := range loseMark {
		rel.loseMark[id] = true
	}
	relCtx, stopRelay := context.WithCancel(ctx)
	var relWG sync.WaitGroup
	relWG.Go(func() { rel.run(relCtx) })
	defer relWG.Wait()
	defer stopRelay()

	nt, ntTally := newNotifier(), newTally()
	ntC, err := start(ctx, broker, "notifications", nt, consumer.Config{
		Name:     "notifier",
		Logger:   logger,
		Observer: ntTally,
	}, middleware.Idempotency(claims))
	if err != nil {
		return nil, err
	}
	defer ntC.stop(ctx)

	// Settle in order: every payment, then every event publish (no handler
	// records events any more), then every copy the notifier was sent.
	if err := ledTally.waitFinal(wait, len(msgs)); err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	if err := ledC.stop(ctx); err != nil {
		return nil, err
	}
	if err := led.waitDrained(wait); err != nil {
		return nil, fmt.Errorf("relay: %w", err)
	}
	stopRelay()
	relWG.Wait()
	publishes := rel.published()
	total := 0
	for _, n := range publishes {
		total += n
	}
	if err := ntTally.waitFinal(wait, total); err != nil {
		return nil, fmt.Errorf("notifier: %w", err)
	}
	if err := ntC.stop(ctx); err != nil {
		return nil, err
	}

	dl, err := broker.DeadLetters(ctx, "payments", "ledger", 0)
	if err != nil {
		return nil, err
	}
	// Every goroutine has ended: the state below is final.
	rep := &report{
		payments: len(msgs), ledger: ledTally, notifier: ntTally, balances: led.balances, deadLetters: len(dl),
		publishes: publishes, notified: nt.sent, notes: nt.text,
	}
	for _, m := range led.outbox {
		rep.events = append(rep.events, m.ID)
	}
	slices.Sort(rep.events)
	return rep, nil
}

// running is a consumer started by start.
type running struct {
	name string
	c    *consumer.Consumer
	done chan error
	once sync.Once
	err  error
}

// start runs a consumer of source with h and mw until stop.
func start(ctx context.Context, broker adapters.Broker, source string, h consumer.Handler, cfg consumer.Config, mw ...consumer.Middleware) (*running, error) {
	src, err := broker.Source(ctx, source, cfg.Name)
	if err != nil {
		return nil, err
	}
	c, err := consumer.New(src, h, cfg, mw...)
	if err != nil {
		return nil, errors.Join(err, src.Close(ctx))
	}
	r := &running{name: cfg.Name, c: c, done: make(chan error, 1)}
	go func() { r.done <- c.Run(ctx) }()
	return r, nil
}

// stop stops the consumer and waits until its Run returned; later calls
// return the first one's result.
func (r *running) stop(ctx context.Context) error {
	r.once.Do(func() {
		stopErr := r.c.Stop(ctx)
		runErr := <-r.done
		if r.err = stopErr; r.err == nil && runErr != nil {
			r.err = fmt.Errorf("%s stopped: %w", r.name, runErr)
		}
	})
	return r.err
}
