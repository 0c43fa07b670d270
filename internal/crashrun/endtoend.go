package crashrun

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/store/postgres"
)

// The end-to-end run (Config.EndToEnd) adds to every round a relay process
// (`oncely relay`) publishing the ledger's outbox, SIGKILLed at a moment of
// its own (relaykill.go), and a downstream consumer in the harness applying
// the events (downstream.go).

// endToEnd is the relay, the gate and the downstream of one run.
type endToEnd struct {
	cfg     Config
	pool    *pgxpool.Pool
	dest    string
	outbox  string
	appName string
	gateKey int64
	relay   *program
	down    *downstream
	// closeBroker closes the downstream's own broker (SQS only).
	closeBroker func() error
}

// eventsDestination is the ledger's -events destination of a run: a FIFO
// queue on SQS (MessageGroupId = the account, so per-account order holds).
func eventsDestination(brokerURL, runID string) string {
	d := "ledger-applied-" + runID
	if strings.HasPrefix(brokerURL, "sqs:") {
		d += ".fifo"
	}
	return d
}

// newEndToEnd migrates schema (claims and outbox, before the ledger does),
// installs the gate, and starts the downstream on dest.
func newEndToEnd(ctx context.Context, cfg Config, pool *pgxpool.Pool, broker adapters.Broker, schema, dbURL, runID, dest string) (*endToEnd, error) {
	e := &endToEnd{cfg: cfg, pool: pool, dest: dest, outbox: pgx.Identifier{schema, "outbox"}.Sanitize(),
		appName: "crashtest-relay-" + runID, gateKey: int64(cfg.Rand.Uint64() >> 1)}
	if err := postgres.Migrate(ctx, pool, schema); err != nil {
		return nil, fmt.Errorf("crashtest: migrating %s: %w", schema, err)
	}
	fn := pgx.Identifier{schema, "crashtest_gate"}.Sanitize()
	if _, err := pool.Exec(ctx, fmt.Sprintf(`CREATE FUNCTION %s() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN PERFORM pg_advisory_xact_lock_shared(%d); RETURN NULL; END $$`, fn, e.gateKey)); err != nil {
		return nil, fmt.Errorf("crashtest: creating the relay gate: %w", err)
	}
	if _, err := pool.Exec(ctx, fmt.Sprintf("CREATE TRIGGER crashtest_gate BEFORE UPDATE ON %s FOR EACH STATEMENT EXECUTE FUNCTION %s()", e.outbox, fn)); err != nil {
		return nil, fmt.Errorf("crashtest: creating the relay gate: %w", err)
	}
	sep := "?"
	if strings.Contains(dbURL, "?") {
		sep = "&"
	}
	if !strings.Contains(dbURL, "://") {
		return nil, fmt.Errorf("crashtest: the end-to-end run needs DatabaseURL as a postgres:// URL")
	}
	e.relay = &program{name: "relay", bin: cfg.Oncely, ready: []byte("relaying schema"), logDir: cfg.LogDir,
		args: []string{"relay", "--broker", cfg.BrokerURL, "--database-url", dbURL + sep + "application_name=" + e.appName,
			"--schema", schema, "--poll", "200ms"}}
	if strings.HasPrefix(cfg.BrokerURL, "sqs:") {
		// The SQS emulator hands a FIFO group's next messages to a
		// concurrent receive call while earlier ones are in flight (SQS
		// does not): one receive call at a time keeps the group's order
		// into the downstream's lane.
		b, err := adapters.Open(ctx, cfg.BrokerURL+"&receivers=1")
		if err != nil {
			return nil, fmt.Errorf("crashtest: the downstream's broker: %w", err)
		}
		broker, e.closeBroker = b, b.Close
	}
	d, err := startDownstream(ctx, pool, broker, schema, dest)
	if err != nil {
		e.close()
		return nil, err
	}
	e.down = d
	return e, nil
}

// close stops the downstream and closes its broker, if it has its own;
// later calls return the first one's error.
func (e *endToEnd) close() error {
	var err error
	if e.down != nil {
		err = e.down.stop()
	}
	if e.closeBroker != nil {
		_ = e.closeBroker()
		e.closeBroker = nil
	}
	return err
}

// waitRound waits until the downstream applied every good payment of the
// round with prefix and the outbox holds no unpublished row, so that the
// next round's relay kill sees only its own rows unmarked. It fails when one
// of procs exits by itself.
func (e *endToEnd) waitRound(ctx context.Context, prefix string, good int, timeout time.Duration, procs []*process) error {
	deadline := time.Now().Add(timeout)
	for {
		n, err := e.down.applied(ctx, e.pool, prefix)
		if err != nil {
			return err
		}
		var unpublished int
		if err := e.pool.QueryRow(ctx, "SELECT count(*) FROM "+e.outbox+" WHERE published_at IS NULL").Scan(&unpublished); err != nil {
			return err
		}
		if n >= good && unpublished == 0 {
			return nil
		}
		if err := exitedEarly(procs); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after %s the downstream had applied %d of %d events, %d outbox rows unpublished", timeout, n, good, unpublished)
		}
		if err := sleep(ctx, 50*time.Millisecond); err != nil {
			return err
		}
	}
}

// eventCounts returns the downstream rows per payment ID.
func (e *endToEnd) eventCounts(ctx context.Context) (map[string]int, error) {
	return countPerID(ctx, e.pool, "SELECT payment_id, count(*) FROM "+e.down.table+" GROUP BY payment_id", "events")
}

// order checks per account that the downstream applied seq 1, 2, 3, … in
// that order: it returns the number of accounts, the rows out of place (a
// seq other than the previous one's plus one, in applied order) and the
// accounts whose event count differs from their ledger entries.
func (e *endToEnd) order(ctx context.Context, ledgerEntries string) (accounts, outOfPlace, mismatched int, err error) {
	rows, err := e.pool.Query(ctx, "SELECT account, seq FROM "+e.down.table+" ORDER BY account, id")
	if err != nil {
		return 0, 0, 0, fmt.Errorf("crashtest: reading events: %w", err)
	}
	var (
		acct, last string
		seq, prev  int64
	)
	perAccount := map[string]int{}
	_, err = pgx.ForEachRow(rows, []any{&acct, &seq}, func() error {
		if acct != last {
			last, prev = acct, 0
		}
		if seq != prev+1 {
			outOfPlace++
		}
		prev = seq
		perAccount[acct]++
		return nil
	})
	if err != nil {
		return 0, 0, 0, err
	}
	entries := map[string]int{}
	rows, err = e.pool.Query(ctx, "SELECT account, count(*) FROM "+ledgerEntries+" WHERE account <> 'poison' GROUP BY account")
	if err != nil {
		return 0, 0, 0, err
	}
	var n int
	if _, err := pgx.ForEachRow(rows, []any{&acct, &n}, func() error { entries[acct] = n; return nil }); err != nil {
		return 0, 0, 0, err
	}
	for a, n := range entries {
		if perAccount[a] != n {
			mismatched++
		}
	}
	for a := range perAccount {
		if _, ok := entries[a]; !ok {
			mismatched++
		}
	}
	return len(entries), outOfPlace, mismatched, nil
}

// restartRelay starts the round's second relay, waits until the round is
// through the downstream (waitRound) and stops the relay with SIGTERM.
func (e *endToEnd) restartRelay(ctx context.Context, res *Result, name, prefix string, good int, ledgers []*process) error {
	rp, err := e.relay.start(name)
	if err != nil {
		return err
	}
	werr := e.waitRound(ctx, prefix, good, e.cfg.RoundTimeout, append(slices.Clone(ledgers), rp))
	res.stopped(rp)
	return werr
}

// drain runs the final relay until the downstream applied all good events
// of the run (payment IDs starting with prefix), the outbox is published
// and the events destination holds nothing for the downstream.
func (e *endToEnd) drain(ctx context.Context, res *Result, broker adapters.Broker, prefix string, good int, ledgers []*process) error {
	rp, err := e.relay.start("final")
	if err != nil {
		return err
	}
	werr := e.waitRound(ctx, prefix, good, e.cfg.RoundTimeout, append(slices.Clone(ledgers), rp))
	if werr == nil {
		werr = drain(ctx, broker, e.dest, downstreamName, nil, e.cfg.RoundTimeout, []*process{rp})
	}
	res.stopped(rp)
	return werr
}
