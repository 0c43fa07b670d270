// Package crashrun kills the ledger example (examples/ledger) with SIGKILL
// at random moments and counts what the kills did to its effects: payments
// lost (no ledger_entries row) and payments applied twice (more than one
// row for a message ID).
//
// A run is a number of rounds, one kill each, so every kill's damage is
// counted on its own:
//
//  1. publish a batch of payments with fresh message IDs (plus one poison
//     payment, which must end in the dead-letter destination and is not
//     counted);
//  2. start the ledger as a child process (with Config.Instances, that
//     many of them together, all the same consumer) and SIGKILL it (or
//     some of them) mid-stream: once a drawn number, 1 to 80 % of the
//     batch's payments, have an effect ("aimed"), or in every fourth round
//     at a random moment 0.3–3 s after the start ("timed"; see
//     Config.TimedEvery). The ledger works through the batch meanwhile:
//     each payment takes -handler-delay, or with Config.HandlerBatch each
//     batch of payments does;
//  3. start the killed processes again at once, wait until every payment
//     of the batch has an effect, stop every process with SIGTERM (each
//     must exit 0).
//
// After the last round the ledger runs once more until the broker holds
// nothing for it and every poison payment is dead-lettered, then the
// harness counts, per round, the batch's message IDs with no row (lost)
// and with more than one row (duplicated).
//
// With Config.EndToEnd a run tests the whole chain instead: the ledger
// sends one event per applied payment through its outbox (in the payment's
// transaction), `oncely relay` runs as a child process of its own and is
// SIGKILLed every round too (see RelayInMark for how most kills land
// between a publish and its mark), and a downstream consumer in the harness applies
// the events with idempotency claims of its own. Each round then also waits
// until the downstream applied the batch's events and the outbox is
// published, and the counts add, per payment, events lost and applied
// twice downstream, and per account whether the downstream applied seq 1,
// 2, 3, … in that order.
//
// The broker must outlive the kills: RabbitMQ and the SQS emulator are
// services; for Kafka the harness starts `oncely dev kafka` as a separate
// child process on a free port (see StartKafka). mem:// dies with the
// process and cannot be crash-tested.
//
// It is production code, the engine of `oncely crashtest`; its own tests
// (crashrun_test.go and the others) are the suite's bounded crash runs.
package crashrun

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
)

// Run performs one crash test. The Result is complete only when the error
// is nil; after an error it holds the kills made so far, uncounted.
func Run(ctx context.Context, cfg Config) (res Result, err error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return res, err
	}
	start := time.Now()
	res = Result{Broker: cfg.Name, Dedupe: cfg.Dedupe, HandlerBatch: cfg.HandlerBatch, Instances: cfg.Instances, EndToEnd: cfg.EndToEnd}
	defer func() { res.Elapsed = time.Since(start) }()

	if cfg.LogDir == "" {
		dir, err := os.MkdirTemp("", "oncely-crashtest-")
		if err != nil {
			return res, err
		}
		defer os.RemoveAll(dir)
		cfg.LogDir = dir
	}
	runID := fmt.Sprintf("c%x", cfg.Rand.Uint32())
	schema := "crash_" + runID
	source := "payments-" + runID

	pcfg, err := pgxpool.ParseConfig(cfg.DatabaseURL)
	if err != nil {
		return res, fmt.Errorf("crashtest: database: %w", err)
	}
	// The harness's queries, the relay gate's session and, with EndToEnd,
	// the downstream's handlers share the pool: the default (4 on 2 cores)
	// can leave the harness waiting for a connection.
	pcfg.MaxConns = max(pcfg.MaxConns, 16)
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return res, fmt.Errorf("crashtest: database: %w", err)
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize()); err != nil {
		return res, fmt.Errorf("crashtest: creating schema %s: %w", schema, err)
	}
	if !cfg.KeepSchema {
		defer func() {
			_, _ = pool.Exec(context.WithoutCancel(ctx), "DROP SCHEMA "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
		}()
	}
	dbURL, err := withSearchPath(cfg.DatabaseURL, schema)
	if err != nil {
		return res, err
	}

	broker, err := adapters.Open(ctx, cfg.BrokerURL)
	if err != nil {
		return res, fmt.Errorf("crashtest: %w", err)
	}
	defer broker.Close()

	l := &program{name: "ledger", bin: cfg.Ledger, ready: []byte(`"msg":"ledger started"`), logDir: cfg.LogDir, env: []string{"DATABASE_URL=" + dbURL},
		args: []string{"-dedupe=" + strconv.FormatBool(cfg.Dedupe), "-source", source, "-schema", schema,
			"-concurrency", strconv.Itoa(cfg.Concurrency), "-handler-delay", cfg.HandlerDelay.String(), "-log-level", "info"}}
	if cfg.HandlerBatch > 0 {
		l.args = append(l.args, "-batch", strconv.Itoa(cfg.HandlerBatch))
	}
	w := &watcher{pool: pool, schema: schema}
	var e2e *endToEnd
	if cfg.EndToEnd {
		dest := eventsDestination(cfg.BrokerURL, runID)
		l.args = append(l.args, "-events", dest, "-relay=false")
		if e2e, err = newEndToEnd(ctx, cfg, pool, broker, schema, dbURL, runID, dest); err != nil {
			return res, err
		}
		defer e2e.close()
	} else {
		// Without the downstream nothing reads the events: send none, rather
		// than fill the ledger's default destination on a shared broker.
		l.args = append(l.args, "-events", "")
	}

	ledgers, err := newFleet(l, cfg.BrokerURL, cfg.Instances)
	if err != nil {
		return res, err
	}
	var poison []string
	for round := 1; round <= cfg.Kills; round++ {
		prefix := fmt.Sprintf("%s-r%03d-", runID, round)
		msgs, poisonID := batch(prefix, cfg.Batch, cfg.Accounts, cfg.Rand)
		poison = append(poison, poisonID)
		if err := broker.Publish(ctx, source, msgs...); err != nil {
			return res, fmt.Errorf("crashtest: round %d: publishing: %w", round, err)
		}
		if err := playRound(ctx, cfg, &res, round, prefix, ledgers, w, e2e); err != nil {
			return res, err
		}
	}

	// Drain: run until the broker holds nothing for the ledger and every
	// poison payment is dead-lettered.
	if err := ledgers.startAll("final"); err != nil {
		return res, err
	}
	derr := drain(ctx, broker, source, "ledger", poison, cfg.RoundTimeout, ledgers.procs)
	if e2e != nil && derr == nil {
		derr = e2e.drain(ctx, &res, broker, runID+"-", cfg.Kills*(cfg.Batch-1), ledgers.procs)
	}
	ledgers.stopAll(&res)
	if derr != nil {
		cfg.Progress("%s dedupe=%t: final drain incomplete: %v", cfg.Name, cfg.Dedupe, derr)
	}
	if e2e != nil {
		if err := e2e.close(); err != nil {
			return res, fmt.Errorf("crashtest: the downstream consumer: %w", err)
		}
	}

	counts, err := w.counts(ctx)
	if err != nil {
		return res, err
	}
	var events map[string]int
	if e2e != nil {
		if events, err = e2e.eventCounts(ctx); err != nil {
			return res, err
		}
		if res.Accounts, res.EventsOutOfOrder, res.AccountsMismatched, err = e2e.order(ctx, w.table()); err != nil {
			return res, err
		}
	}
	for i := range res.Kills {
		prefix := fmt.Sprintf("%s-r%03d-", runID, i+1)
		for j := range cfg.Batch - 1 {
			id := fmt.Sprintf("%s%05d", prefix, j)
			switch n := counts[id]; {
			case n == 0:
				res.Kills[i].Lost++
			case n > 1:
				res.Kills[i].Duplicated++
			}
			if events == nil {
				continue
			}
			switch n := events[id]; {
			case n == 0:
				res.Kills[i].EventsLost++
			case n > 1:
				res.Kills[i].EventsTwice++
			}
		}
		res.Messages += cfg.Batch - 1
	}
	res.Poison = len(poison)
	dls, err := broker.DeadLetters(ctx, source, "ledger", 0)
	if err != nil {
		return res, fmt.Errorf("crashtest: listing dead letters: %w", err)
	}
	inDLQ := map[string]bool{}
	for _, d := range dls {
		inDLQ[d.Message.ID] = true
	}
	for _, id := range poison {
		if inDLQ[id] {
			res.PoisonDeadLettered++
		}
	}
	return res, nil
}

// batch returns n payments: n-1 good ones with IDs prefix00000… to
// accounts acc-0 … acc-(accounts-1) in turn, and one poison payment at a
// random position.
func batch(prefix string, n, accounts int, rnd *rand.Rand) ([]*consumer.Message, string) {
	msgs := make([]*consumer.Message, 0, n)
	for i := range n - 1 {
		acct := fmt.Sprintf("acc-%d", i%accounts)
		msgs = append(msgs, &consumer.Message{ID: fmt.Sprintf("%s%05d", prefix, i), Key: acct,
			Body: fmt.Appendf(nil, `{"account":%q,"amount_cents":%d}`, acct, 1+i%7)})
	}
	poisonID := prefix + "poison"
	pos := rnd.IntN(n)
	msgs = append(msgs[:pos], append([]*consumer.Message{{ID: poisonID, Key: "poison", Body: []byte(`{"account":"poison","amount_cents":1}`)}}, msgs[pos:]...)...)
	return msgs, poisonID
}

// withSearchPath adds search_path=schema to a Postgres URL or DSN.
func withSearchPath(dbURL, schema string) (string, error) {
	if strings.Contains(dbURL, "://") {
		sep := "?"
		if strings.Contains(dbURL, "?") {
			sep = "&"
		}
		return dbURL + sep + "search_path=" + schema, nil
	}
	return dbURL + " search_path=" + schema, nil
}
