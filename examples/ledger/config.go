package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"time"
)

// config is the ledger's configuration from flags and environment.
type config struct {
	brokerURL    string
	databaseURL  string
	dedupe       bool
	concurrency  int
	batch        int
	addr         string
	schema       string
	source       string
	events       string
	relay        bool
	consumer     string
	handlerDelay time.Duration
	maxAttempts  int
	retryDelay   time.Duration
	logLevel     slog.Level
}

func parseConfig(args []string, getenv func(string) string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("ledger", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.BoolVar(&c.dedupe, "dedupe", true, "apply each payment in the idempotency claim's transaction (false: plain at-least-once, duplicates show)")
	fs.IntVar(&c.concurrency, "concurrency", 16, "handler goroutines (with -batch: batches at once)")
	fs.IntVar(&c.batch, "batch", 0, "apply payments N at a time with set-based SQL (one statement for the accounts, one for the entries); 0 or 1: one transaction per payment")
	fs.StringVar(&c.addr, "addr", "", "serve /metrics, /livez and /readyz on this address (e.g. :9090); empty: no HTTP server")
	fs.StringVar(&c.source, "source", "payments", "source to consume (topic or queue); tests use a unique name")
	fs.StringVar(&c.consumer, "consumer", consumerName, "consumer name: the Kafka group, the claims' and dead letters' owner; tests sharing a broker use a unique one")
	fs.StringVar(&c.schema, "schema", "oncely", "Postgres schema of the oncely claims and outbox tables")
	fs.StringVar(&c.events, "events", "ledger-applied", "destination (topic or queue, on the same broker) of the ledger.applied event each applied payment sends through the outbox; empty: no events")
	fs.BoolVar(&c.relay, "relay", true, "publish the outbox in-process (an outbox.Relay next to the consumer); false: leave it to a separate oncely relay --schema SCHEMA process")
	fs.DurationVar(&c.handlerDelay, "handler-delay", 0, "extra time each payment takes, to simulate work (crash tests use it so kills land mid-stream)")
	fs.IntVar(&c.maxAttempts, "max-attempts", 3, "attempts before a failing payment is dead-lettered")
	fs.DurationVar(&c.retryDelay, "retry-delay", 200*time.Millisecond, "delay before the first retry (doubling, with jitter, up to 10x)")
	fs.TextVar(&c.logLevel, "log-level", slog.LevelInfo, "log level: debug, info, warn or error")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: ledger [flags]

Consumes the source "payments" as consumer "ledger" and applies each payment
{"account":"acc-17","amount_cents":250} to the Postgres tables ledger_accounts
and ledger_entries (created when missing). Each applied payment also sends,
in the same transaction, a ledger.applied event through the outbox to the
destination -events (default "ledger-applied", on the same broker), keyed by
account, with ID outbox.DeriveID(<-consumer>, <payment ID>, 0) and body
{"payment_id":"p1","account":"acc-17","amount_cents":250,"seq":3} (seq: the
account's count of applied payments, in commit order). The outbox is
published by a relay running in-process unless -relay=false. Stops cleanly
on SIGTERM.

Environment:
  BROKER_URL    kafka://host:port[,host:port] | amqp://user:pass@host:port/vhost |
                sqs://REGION?endpoint=URL | mem:// (default: mem://, process-local)
  DATABASE_URL  Postgres connection string (required)

Flags:
`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments %q; the ledger takes only flags (see -help)", fs.Args())
	}
	c.brokerURL = getenv("BROKER_URL")
	if c.brokerURL == "" {
		c.brokerURL = "mem://"
	}
	c.databaseURL = getenv("DATABASE_URL")
	var errs []error
	if c.databaseURL == "" {
		errs = append(errs, errors.New("DATABASE_URL is not set: the ledger writes to Postgres, e.g. DATABASE_URL=postgres://postgres@127.0.0.1:5432/test?sslmode=disable (for a demo without services run go run ./examples/quickstart)"))
	}
	if c.source == "" {
		errs = append(errs, errors.New("-source must not be empty"))
	}
	if c.concurrency < 1 {
		errs = append(errs, fmt.Errorf("-concurrency must be >= 1, got %d", c.concurrency))
	}
	if c.batch < 0 {
		errs = append(errs, fmt.Errorf("-batch must be >= 0, got %d", c.batch))
	}
	if c.batch > 1 && !c.dedupe {
		errs = append(errs, errors.New("-batch needs -dedupe: batches apply in the idempotency claim's transaction"))
	}
	if c.maxAttempts < 1 {
		errs = append(errs, fmt.Errorf("-max-attempts must be >= 1, got %d", c.maxAttempts))
	}
	if c.consumer == "" {
		errs = append(errs, errors.New("-consumer must not be empty"))
	}
	if c.retryDelay <= 0 {
		errs = append(errs, fmt.Errorf("-retry-delay must be > 0, got %s", c.retryDelay))
	}
	if c.handlerDelay < 0 {
		errs = append(errs, fmt.Errorf("-handler-delay must be >= 0, got %s", c.handlerDelay))
	}
	return c, errors.Join(errs...)
}
