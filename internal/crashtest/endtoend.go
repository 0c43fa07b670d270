package crashtest

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/store/postgres"
)

// The end-to-end run (Config.EndToEnd) adds to every round a relay process
// (`oncely relay`) publishing the ledger's outbox, SIGKILLed at a moment of
// its own, and a downstream consumer in the harness applying the events.
//
// Relay kills land inside a relay round (after the broker confirmed a
// publish, before the round's mark committed) through a gate in the
// database, not in the relay: a statement trigger on the run's outbox table
// makes every UPDATE of it (the relay's mark) wait for an advisory lock
// that the harness holds while the gate is closed. At the round's random
// relay moment the harness closes the gate and waits until a relay
// connection waits at it (pg_stat_activity: that connection's round has
// published its rows and not marked them). Then, by the round's mode:
//
//   - RelayInMark: SIGKILL the relay while it waits to mark;
//   - RelayAfterMark: open the gate and SIGKILL the relay as soon as the
//     waiting connections committed their marks (a relay that marked
//     before publishing would be publishing now);
//   - RelayRandom: no gate, SIGKILL at the random moment itself.
//
// Whatever the mode, the kill's effect is observed, not assumed: with the
// relay dead, an event the downstream applied whose outbox row is still
// unpublished was confirmed by the broker and not marked
// (RelayKill.Unmarked).

// Relay kill modes (RelayKill.Mode).
const (
	RelayInMark    = "in-mark"
	RelayAfterMark = "after-mark"
	RelayRandom    = "random"
)

// relayMode is the relay kill mode of round (1-based): of every 5 rounds, 3
// kill in the mark, 1 after it, 1 at random.
func relayMode(round int) string {
	switch round % 5 {
	case 0:
		return RelayRandom
	case 3:
		return RelayAfterMark
	}
	return RelayInMark
}

// gateWait bounds the wait for a relay connection at the closed gate (a
// round whose ledger has nothing left to send never gets there; on NATS a
// killed ledger's payments come back after the 5 s AckWait).
const gateWait = 6 * time.Second

// unmarkedWait bounds the wait, after a relay kill, for the downstream to
// apply an event the killed relay published and did not mark.
const unmarkedWait = time.Second

// RelayKill is what one relay kill did.
type RelayKill struct {
	// After is the round's relay moment after the relay's start: the kill's,
	// or in the gated modes the gate's closing, the kill following once a
	// relay round waited at it.
	After time.Duration
	// Mode is RelayInMark, RelayAfterMark or RelayRandom.
	Mode string
	// Waited reports that a relay round waited at the gate, published and
	// not marked: the kill landed then (RelayInMark) or right after the
	// marks committed (RelayAfterMark).
	Waited bool
	// Unmarked is the number of events the downstream applied, after the
	// kill, whose outbox rows were still unpublished: the broker had them,
	// the killed relay had not marked them. Unmarked > 0 is a mid-round kill.
	Unmarked int
}

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

// killRelay SIGKILLs p at the round's relay moment, in mode (see
// relayMode), and observes what the kill left.
func (e *endToEnd) killRelay(ctx context.Context, p *process, mode string) (k RelayKill, err error) {
	k = RelayKill{Mode: mode}
	defer func() {
		if err != nil {
			p.kill()
		}
	}()
	k.After = e.cfg.MinKill + time.Duration(e.cfg.Rand.Int64N(int64(e.cfg.MaxKill-e.cfg.MinKill)+1))
	if err := sleep(ctx, time.Until(p.started.Add(k.After))); err != nil {
		return k, err
	}
	if mode != RelayRandom {
		open, waited, err := e.closeGate(ctx)
		// The killed relay's connection may still wait at the gate; open
		// runs after the count below, and the connection goes on, finds its
		// client gone and rolls back.
		defer open()
		if err != nil {
			return k, err
		}
		k.Waited = len(waited) > 0
		switch {
		case k.Waited && mode == RelayInMark:
			// Let the other workers' rounds, if any have rows, pile up at
			// the gate too: the kill then catches several rounds published.
			if err := sleep(ctx, time.Duration(e.cfg.Rand.Int64N(int64(300*time.Millisecond)))); err != nil {
				return k, err
			}
		case k.Waited && mode == RelayAfterMark:
			open()
			if err := e.waitCommitted(ctx, waited); err != nil {
				return k, err
			}
		}
	}
	p.kill()
	deadline := time.Now().Add(unmarkedWait)
	for {
		if err := e.pool.QueryRow(ctx, "SELECT count(*) FROM "+e.down.table+" d JOIN "+e.outbox+
			" o ON o.message_id = d.event_id WHERE o.published_at IS NULL").Scan(&k.Unmarked); err != nil {
			return k, err
		}
		if k.Unmarked > 0 || time.Now().After(deadline) {
			return k, nil
		}
		if err := sleep(ctx, 20*time.Millisecond); err != nil {
			return k, err
		}
	}
}

// closeGate closes the gate and waits, up to gateWait, until relay
// connections wait at it; it returns their backend PIDs (none when no
// round got there in time) and open, which opens the gate (idempotent).
func (e *endToEnd) closeGate(ctx context.Context) (open func(), waiting []uint32, err error) {
	conn, err := e.pool.Acquire(ctx)
	if err != nil {
		return func() {}, nil, err
	}
	opened := false
	open = func() {
		if !opened {
			opened = true
			// A released connection keeps session locks: unlock first.
			_, _ = conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock_all()")
			conn.Release()
		}
	}
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", e.gateKey); err != nil {
		return open, nil, fmt.Errorf("crashtest: closing the relay gate: %w", err)
	}
	deadline := time.Now().Add(gateWait)
	for time.Now().Before(deadline) {
		rows, err := e.pool.Query(ctx, `SELECT pid FROM pg_stat_activity
			WHERE application_name = $1 AND wait_event_type = 'Lock' AND wait_event = 'advisory'`, e.appName)
		if err != nil {
			return open, nil, err
		}
		if waiting, err = pgx.CollectRows(rows, pgx.RowTo[uint32]); err != nil || len(waiting) > 0 {
			return open, waiting, err
		}
		if err := sleep(ctx, 10*time.Millisecond); err != nil {
			return open, nil, err
		}
	}
	return open, nil, nil
}

// waitCommitted polls, without pausing, until none of the backends pids is
// in a transaction any more: their rounds' marks committed.
func (e *endToEnd) waitCommitted(ctx context.Context, pids []uint32) error {
	deadline := time.Now().Add(gateWait)
	for time.Now().Before(deadline) {
		var busy bool
		if err := e.pool.QueryRow(ctx, `SELECT count(*) > 0 FROM pg_stat_activity
			WHERE pid = ANY($1) AND state IN ('active', 'idle in transaction')`, pids).Scan(&busy); err != nil {
			return err
		}
		if !busy {
			return nil
		}
	}
	return nil
}

// waitRound waits until the downstream applied every good payment of the
// round with prefix and the outbox holds no unpublished row, so that the
// next round's relay kill sees only its own rows unmarked.
func (e *endToEnd) waitRound(ctx context.Context, prefix string, good int, timeout time.Duration, procs ...*process) error {
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
		for _, p := range procs {
			if err := p.exitedEarly(); err != nil {
				return err
			}
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
	rows, err := e.pool.Query(ctx, "SELECT payment_id, count(*) FROM "+e.down.table+" GROUP BY payment_id")
	if err != nil {
		return nil, fmt.Errorf("crashtest: counting events: %w", err)
	}
	out := map[string]int{}
	var id string
	var n int
	_, err = pgx.ForEachRow(rows, []any{&id, &n}, func() error {
		out[id] = n
		return nil
	})
	return out, err
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

type relayKillResult struct {
	kill RelayKill
	err  error
}

// startAndKill starts a relay process named name and kills it (killRelay)
// in the background; the result arrives on the channel.
func (e *endToEnd) startAndKill(ctx context.Context, name, mode string) (chan relayKillResult, error) {
	rp, err := e.relay.start(name)
	if err != nil {
		return nil, err
	}
	ch := make(chan relayKillResult, 1)
	go func() {
		k, err := e.killRelay(ctx, rp, mode)
		ch <- relayKillResult{k, err}
	}()
	return ch, nil
}

// restartRelay starts the round's second relay, waits until the round is
// through the downstream (waitRound) and stops the relay with SIGTERM.
func (e *endToEnd) restartRelay(ctx context.Context, res *Result, name, prefix string, good int, ledger *process) error {
	rp, err := e.relay.start(name)
	if err != nil {
		return err
	}
	werr := e.waitRound(ctx, prefix, good, e.cfg.RoundTimeout, ledger, rp)
	res.stopped(rp)
	return werr
}

// drain runs the final relay until the downstream applied all good events
// of the run (payment IDs starting with prefix), the outbox is published
// and the events destination holds nothing for the downstream.
func (e *endToEnd) drain(ctx context.Context, res *Result, broker adapters.Broker, prefix string, good int, ledger *process) error {
	rp, err := e.relay.start("final")
	if err != nil {
		return err
	}
	werr := e.waitRound(ctx, prefix, good, e.cfg.RoundTimeout, ledger, rp)
	if werr == nil {
		werr = drain(ctx, broker, e.dest, downstreamName, nil, e.cfg.RoundTimeout, rp)
	}
	res.stopped(rp)
	return werr
}

// describe prints k for the progress line ("" without a relay).
func (k RelayKill) describe() string {
	if k.After == 0 {
		return ""
	}
	return fmt.Sprintf("; relay killed at %s (%s, a round waited to mark: %t), %d events applied and unmarked", k.After.Round(time.Millisecond), k.Mode, k.Waited, k.Unmarked)
}
