package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/outbox"
	"github.com/oncely/oncely/store/postgres"
)

// appliedEvent is the body of the ledger.applied event an applied payment
// sends: Seq is the account's count of applied payments after this one
// (1, 2, 3, … per account, in commit order), kept in ledger_accounts.applied.
type appliedEvent struct {
	PaymentID   string `json:"payment_id"`
	Account     string `json:"account"`
	AmountCents int64  `json:"amount_cents"`
	Seq         int64  `json:"seq"`
}

// events sends the ledger.applied events into the outbox of the -schema, to
// the -events destination. A nil *events sends nothing (-events "").
type events struct {
	sender      *outbox.Sender
	destination string
}

func newEvents(cfg config) (*events, error) {
	if cfg.events == "" {
		return nil, nil
	}
	s, err := outbox.NewSender(cfg.schema)
	if err != nil {
		return nil, err
	}
	return &events{sender: s, destination: cfg.events}, nil
}

// send writes the event of payment p (message paymentID), the account's
// seq-th, in tx: it commits with the payment's effect and claim or not at
// all. ctx must name the payment as the cause (outbox.WithCause), so the
// event's ID is outbox.DeriveID(consumer, paymentID, 0), the same in every
// retried run.
func (e *events) send(ctx context.Context, tx pgx.Tx, paymentID string, p payment, seq int64) error {
	if e == nil {
		return nil
	}
	m, err := event(paymentID, p, seq)
	if err != nil {
		return err
	}
	if err := e.sender.Send(ctx, tx, e.destination, m); err != nil {
		return fmt.Errorf("sending the ledger.applied event of %s: %w", paymentID, err)
	}
	return nil
}

// sendBatch writes the events of a batch in tx with one outbox.SendBatch:
// payments[i], message msgs[i], is its account's seqs[i]-th and the cause
// of its event, whose ID is therefore the one send derives.
func (e *events) sendBatch(ctx context.Context, tx pgx.Tx, msgs []*consumer.Message, payments []payment, seqs []int64) error {
	if e == nil {
		return nil
	}
	sends := make([]outbox.Outgoing, len(msgs))
	for i, msg := range msgs {
		m, err := event(msg.ID, payments[i], seqs[i])
		if err != nil {
			return err
		}
		sends[i] = outbox.Outgoing{Destination: e.destination, Message: m, Cause: msg}
	}
	if err := e.sender.SendBatch(ctx, tx, sends); err != nil {
		return fmt.Errorf("sending the ledger.applied events of %d payments: %w", len(msgs), err)
	}
	return nil
}

// event is the ledger.applied message of payment p (message paymentID),
// its account's seq-th: keyed by the account, without an ID (derived from
// its cause).
func event(paymentID string, p payment, seq int64) (*consumer.Message, error) {
	body, err := json.Marshal(appliedEvent{PaymentID: paymentID, Account: p.Account, AmountCents: p.AmountCents, Seq: seq})
	if err != nil {
		return nil, err
	}
	return &consumer.Message{Key: p.Account, Body: body}, nil
}

// checkMigrated fails unless schema holds every migration of this build
// (the outbox table among them): the -dedupe=false path, which has no
// store to Check.
func checkMigrated(ctx context.Context, pool *pgxpool.Pool, schema string) error {
	ms, err := postgres.Migrations()
	if err != nil {
		return err
	}
	v, err := postgres.Version(ctx, pool, schema)
	if err != nil {
		return fmt.Errorf("checking the migrations of %s: %w", schema, err)
	}
	if v != len(ms) {
		return fmt.Errorf("schema %s is at version %d, this build needs %d", schema, v, len(ms))
	}
	return nil
}

// relayRunner runs an outbox.Relay next to the consumer (-relay).
type relayRunner struct {
	cancel context.CancelFunc
	done   chan struct{}
	err    error // Run's error, or why it ended early; read after done
}

// newRelay returns the relay of cfg.schema's outbox publishing through
// broker, with its metrics on reg (nil: none).
func newRelay(pool *pgxpool.Pool, broker adapters.Broker, cfg config, reg prometheus.Registerer, log *slog.Logger) (*outbox.Relay, error) {
	return outbox.NewRelay(pool, broker, outbox.Config{
		Schema: cfg.schema,
		// Workers hold pool connections while they publish: two leave the
		// handlers most of the pool, and one round publishes up to
		// BatchSize rows of many accounts in one Publish.
		Workers:    2,
		Registerer: reg,
		Logger:     log,
	})
}

// startRelay runs r with a context of its own: it keeps publishing while
// the consumer drains, until stop. Should Run end before stop (failing),
// failed is called with the reason, so the ledger stops rather than consume
// on with nothing publishing its events.
func startRelay(ctx context.Context, r *outbox.Relay, failed func(error)) *relayRunner {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	rr := &relayRunner{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(rr.done)
		rr.err = r.Run(ctx)
		if ctx.Err() == nil {
			rr.err = fmt.Errorf("outbox relay stopped while the consumer ran: %w", cmp.Or(rr.err, errors.New("no error")))
			failed(rr.err)
		}
	}()
	return rr
}

// stop ends the relay (a round cut short rolls back; its rows are published
// later) and returns its error.
func (rr *relayRunner) stop() error {
	rr.cancel()
	<-rr.done
	return rr.err
}
