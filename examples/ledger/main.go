// Command ledger is a payments ledger on oncely, the example the project is
// tested with from the outside. It consumes the source "payments" as the
// consumer "ledger" on any broker and applies each payment to Postgres:
//
//	BROKER_URL=amqp://guest:guest@127.0.0.1:5672/ \
//	DATABASE_URL=postgres://postgres@127.0.0.1:5432/test?sslmode=disable \
//	go run ./examples/ledger [-dedupe=true] [-concurrency 16] [-addr :9090]
//
// Environment:
//
//	BROKER_URL    kafka://host:port[,host:port] | amqp://user:pass@host:port/vhost |
//	              sqs://REGION?endpoint=URL | mem:// (the default; process-local)
//	DATABASE_URL  Postgres connection string (required). Tables are created in
//	              the connection's search_path (add &search_path=NAME to choose).
//
// A message body is {"account":"acc-17","amount_cents":250}; its ID is in the
// broker's default place (Kafka header message-id, AMQP message_id property,
// SQS attribute message-id). The effect, in one transaction:
//
//	INSERT INTO ledger_accounts … ON CONFLICT (account) DO UPDATE SET balance_cents = balance_cents + amount, applied = applied + 1 RETURNING applied
//	INSERT INTO ledger_entries (message_id, account, amount_cents) …   -- no unique constraint on message_id
//
// The same transaction sends a ledger.applied event through the outbox
// (package outbox) to the destination -events (default
// "ledger-applied", on the same broker; -events "" turns it off): key the
// account, ID outbox.DeriveID(<-consumer>, <payment ID>, 0), body
//
//	{"payment_id":"p1","account":"acc-17","amount_cents":250,"seq":3}
//
// where seq is the account's count of applied payments after this one
// (ledger_accounts.applied, updated by the balance's statement, so seqs
// follow commit order). An outbox.Relay in the process publishes it unless
// -relay=false (then run `oncely relay --schema <-schema>`).
//
// With -dedupe (the default) that transaction is the idempotency claim's
// (middleware.Idempotency over store/postgres), so a redelivered payment does
// nothing. With -dedupe=false the same effect runs in its own transaction, as
// plain at-least-once processing: a redelivery after a crash applies the
// payment twice, which ledger_entries shows.
//
// The account "poison" fails every time (a retryable error): it is retried
// with short delays, then dead-lettered with reason exhausted. A body that is
// not valid JSON is dead-lettered at once with reason permanent.
//
// On SIGTERM or SIGINT the ledger stops taking messages, finishes the ones in
// flight, then stops its relay, and exits 0. It creates its tables and runs
// the oncely store migrations (claims and outbox) when they are missing.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	os.Exit(run(os.Args[1:], os.Getenv, os.Stderr))
}

// run parses args and the environment, runs the ledger until SIGTERM/SIGINT
// and returns the exit code: 0 after a clean stop, 1 on failure, 2 for bad
// usage.
func run(args []string, getenv func(string) string, stderr io.Writer) int {
	cfg, err := parseConfig(args, getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "ledger:", err)
		return 2
	}
	log := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: cfg.logLevel}))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := serve(ctx, cfg, log); err != nil {
		log.Error("ledger failed", "error", err)
		return 1
	}
	return 0
}
