// Package crashtest kills the ledger example (examples/ledger) with SIGKILL
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
//  2. start the ledger as a child process and SIGKILL it at a random moment
//     0.3–3 s after its start (it works through the batch meanwhile: each
//     payment takes -handler-delay);
//  3. start it again, wait until every payment of the batch has an effect,
//     stop it with SIGTERM (it must exit 0).
//
// After the last round the ledger runs once more until the broker holds
// nothing for it and every poison payment is dead-lettered, then the
// harness counts, per round, the batch's message IDs with no row (lost)
// and with more than one row (duplicated).
//
// The broker must outlive the kills: RabbitMQ and the SQS emulator are
// services; for Kafka the harness starts `oncely dev kafka` as a separate
// child process on a free port (see StartKafka). mem:// dies with the
// process and cannot be crash-tested.
package crashtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
)

// Defaults applied to zero fields of Config.
const (
	KillsDefault        = 10
	BatchDefault        = 200
	ConcurrencyDefault  = 4
	HandlerDelayDefault = 40 * time.Millisecond
	MinKillDefault      = 300 * time.Millisecond
	MaxKillDefault      = 3 * time.Second
	RoundTimeoutDefault = 90 * time.Second
	StopTimeoutDefault  = 40 * time.Second
)

// Config configures one Run. BrokerURL, DatabaseURL and Ledger are required.
type Config struct {
	// Name labels the broker in the result, e.g. "rabbitmq". Defaults to
	// the URL's scheme.
	Name string

	// BrokerURL is the broker the ledger and the harness use (not mem://).
	BrokerURL string

	// DatabaseURL is the Postgres server. Each run works in a schema of its
	// own, dropped at the end unless KeepSchema.
	DatabaseURL string

	// Ledger is the path of a built examples/ledger binary (see Build).
	Ledger string

	// Dedupe runs the ledger with -dedupe=true (the idempotency claim) or
	// false (plain at-least-once).
	Dedupe bool

	// Kills is the number of rounds, one SIGKILL each. Defaults to
	// KillsDefault (10).
	Kills int

	// Batch is the number of payments published per round. Defaults to
	// BatchDefault (200).
	Batch int

	// Concurrency and HandlerDelay are the ledger's -concurrency and
	// -handler-delay: together they make a batch last a few seconds, so
	// kills land mid-stream. Default ConcurrencyDefault (4) and
	// HandlerDelayDefault (40ms).
	Concurrency  int
	HandlerDelay time.Duration

	// MinKill and MaxKill bound the kill moment after the process start.
	// Default 0.3s and 3s.
	MinKill, MaxKill time.Duration

	// RoundTimeout bounds the wait for a batch's effects after the restart,
	// and the final drain. Defaults to RoundTimeoutDefault (90s).
	RoundTimeout time.Duration

	// LogDir receives the ledger's logs, one file per process. Defaults to
	// a temporary directory removed at the end.
	LogDir string

	// KeepSchema keeps the run's Postgres schema for inspection.
	KeepSchema bool

	// Progress, when set, receives one line per round.
	Progress func(format string, args ...any)

	// Rand draws the kill moments. Defaults to a random seed.
	Rand *rand.Rand
}

func (c Config) withDefaults() Config {
	if c.Name == "" {
		if i := strings.Index(c.BrokerURL, "://"); i > 0 {
			c.Name = c.BrokerURL[:i]
		}
	}
	if c.Kills == 0 {
		c.Kills = KillsDefault
	}
	if c.Batch == 0 {
		c.Batch = BatchDefault
	}
	if c.Concurrency == 0 {
		c.Concurrency = ConcurrencyDefault
	}
	if c.HandlerDelay == 0 {
		c.HandlerDelay = HandlerDelayDefault
	}
	if c.MinKill == 0 {
		c.MinKill = MinKillDefault
	}
	if c.MaxKill == 0 {
		c.MaxKill = MaxKillDefault
	}
	if c.RoundTimeout == 0 {
		c.RoundTimeout = RoundTimeoutDefault
	}
	if c.Progress == nil {
		c.Progress = func(string, ...any) {}
	}
	if c.Rand == nil {
		c.Rand = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	return c
}

func (c Config) validate() error {
	var errs []error
	if c.BrokerURL == "" {
		errs = append(errs, errors.New("BrokerURL is required"))
	} else if strings.HasPrefix(c.BrokerURL, "mem:") {
		errs = append(errs, errors.New("mem:// lives inside the ledger process and dies with it; crash-test rabbitmq, kafka or sqs"))
	}
	if c.DatabaseURL == "" {
		errs = append(errs, errors.New("DatabaseURL is required"))
	}
	if c.Ledger == "" {
		errs = append(errs, errors.New("the Ledger field (the built examples/ledger binary) is required; see Build"))
	}
	if c.Kills < 1 || c.Batch < 1 || c.Concurrency < 1 {
		errs = append(errs, fmt.Errorf("the Kills, Batch and Concurrency fields must be >= 1, got %d, %d, %d", c.Kills, c.Batch, c.Concurrency))
	}
	if c.MinKill < 0 || c.MaxKill < c.MinKill {
		errs = append(errs, fmt.Errorf("want 0 <= MinKill <= MaxKill, got %s and %s", c.MinKill, c.MaxKill))
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("crashtest: invalid config: %w", errors.Join(errs...))
}

// Kill is what one kill did.
type Kill struct {
	// After is the kill's moment after the process start.
	After time.Duration
	// DoneBefore is the number of the round's payments with an effect when
	// the kill landed: 0 < DoneBefore < Batch means mid-stream.
	DoneBefore int
	// Lost and Duplicated count the round's message IDs with no effect and
	// with more than one.
	Lost, Duplicated int
	// Resumed is the time from the SIGKILL to the round's first new effect,
	// made by the restarted process (to within the 50ms the harness polls
	// at); zero when the batch was done before the kill.
	Resumed time.Duration
}

// Result is the outcome of one Run.
type Result struct {
	Broker string
	Dedupe bool
	// Kills has one entry per round.
	Kills []Kill
	// Messages is the number of counted payments (poison excluded).
	Messages int
	// Poison is the number of poison payments, PoisonDeadLettered how many
	// of them reached the dead-letter destination.
	Poison, PoisonDeadLettered int
	// BadExits counts ledger processes that did not exit 0 after SIGTERM;
	// BadExitLogs holds the end of each one's log.
	BadExits    int
	BadExitLogs []string
	// Elapsed is the run's duration.
	Elapsed time.Duration
}

// KillsWithLoss is the number of kills after which payments were lost.
func (r Result) KillsWithLoss() int { return r.count(func(k Kill) bool { return k.Lost > 0 }) }

// KillsWithDuplicates is the number of kills after which payments were
// applied twice.
func (r Result) KillsWithDuplicates() int {
	return r.count(func(k Kill) bool { return k.Duplicated > 0 })
}

// MidStream is the number of kills that landed while the round's batch was
// partly done.
func (r Result) MidStream() int {
	b := 0
	if len(r.Kills) > 0 {
		b = r.Messages / len(r.Kills)
	}
	return r.count(func(k Kill) bool { return k.DoneBefore > 0 && k.DoneBefore < b })
}

// Lost and Duplicated are the totals over all kills.
func (r Result) Lost() int { return r.sum(func(k Kill) int { return k.Lost }) }

// Duplicated is the number of payments applied more than once.
func (r Result) Duplicated() int { return r.sum(func(k Kill) int { return k.Duplicated }) }

// Worst describes the worst kill: "none", "12 twice" or "3 lost".
func (r Result) Worst() string {
	lost, dup := 0, 0
	for _, k := range r.Kills {
		lost, dup = max(lost, k.Lost), max(dup, k.Duplicated)
	}
	switch {
	case lost > 0 && dup > 0:
		return fmt.Sprintf("%d lost, %d twice", lost, dup)
	case lost > 0:
		return fmt.Sprintf("%d lost", lost)
	case dup > 0:
		return fmt.Sprintf("%d twice", dup)
	}
	return "none"
}

func (r Result) count(f func(Kill) bool) int {
	n := 0
	for _, k := range r.Kills {
		if f(k) {
			n++
		}
	}
	return n
}

func (r Result) sum(f func(Kill) int) int {
	n := 0
	for _, k := range r.Kills {
		n += f(k)
	}
	return n
}

// WriteTable prints results as a table: broker, dedupe, kills, kills with
// loss, kills with duplicates, worst kill, the totals, and the median and
// longest time from a kill to the next effect (see Result.Resume).
func WriteTable(w io.Writer, results []Result) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "broker\tdedupe\tkills\tmid-stream\tkills with loss\tkills with duplicates\tworst kill\tlost\tduplicated\tmessages\tpoison in DLQ\tunclean exits\tresume median\tresume max\ttime")
	for _, r := range results {
		n := len(r.Kills)
		median, longest := r.Resume()
		fmt.Fprintf(tw, "%s\t%t\t%d\t%d\t%d of %d\t%d of %d\t%s\t%d\t%d\t%d\t%d of %d\t%d\t%s\t%s\t%s\n",
			r.Broker, r.Dedupe, n, r.MidStream(), r.KillsWithLoss(), n, r.KillsWithDuplicates(), n, r.Worst(),
			r.Lost(), r.Duplicated(), r.Messages, r.PoisonDeadLettered, r.Poison, r.BadExits,
			formatResume(median), formatResume(longest), r.Elapsed.Round(time.Second))
	}
	return tw.Flush()
}

// Run performs one crash test. The Result is complete only when the error
// is nil; after an error it holds the kills made so far, uncounted.
func Run(ctx context.Context, cfg Config) (res Result, err error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return res, err
	}
	start := time.Now()
	res = Result{Broker: cfg.Name, Dedupe: cfg.Dedupe}
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

	pool, err := pgxpool.New(ctx, cfg.DatabaseURL)
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

	l := &ledger{cfg: cfg, env: []string{"BROKER_URL=" + cfg.BrokerURL, "DATABASE_URL=" + dbURL},
		args: []string{"-dedupe=" + strconv.FormatBool(cfg.Dedupe), "-source", source, "-schema", schema,
			"-concurrency", strconv.Itoa(cfg.Concurrency), "-handler-delay", cfg.HandlerDelay.String(), "-log-level", "info"}}
	w := &watcher{pool: pool, schema: schema}

	var poison []string
	for round := 1; round <= cfg.Kills; round++ {
		prefix := fmt.Sprintf("%s-r%03d-", runID, round)
		msgs, poisonID := batch(prefix, cfg.Batch, cfg.Rand)
		poison = append(poison, poisonID)
		if err := broker.Publish(ctx, source, msgs...); err != nil {
			return res, fmt.Errorf("crashtest: round %d: publishing: %w", round, err)
		}

		// The table is created by the ledger; the first round's first
		// process creates it.
		after := cfg.MinKill + time.Duration(cfg.Rand.Int64N(int64(cfg.MaxKill-cfg.MinKill)+1))
		p, err := l.start(fmt.Sprintf("r%03d-killed", round))
		if err != nil {
			return res, err
		}
		if err := sleep(ctx, time.Until(p.started.Add(after))); err != nil {
			p.kill()
			return res, err
		}
		killed := time.Now()
		p.kill()
		done, err := w.done(ctx, prefix)
		if err != nil {
			return res, err
		}
		res.Kills = append(res.Kills, Kill{After: after, DoneBefore: done})

		p, err = l.start(fmt.Sprintf("r%03d-restart", round))
		if err != nil {
			return res, err
		}
		resumed, werr := w.waitDone(ctx, prefix, cfg.Batch, done, cfg.RoundTimeout, p)
		res.stopped(p)
		if werr != nil {
			return res, fmt.Errorf("crashtest: round %d: %w (ledger logs in %s)", round, werr, cfg.LogDir)
		}
		if !resumed.IsZero() {
			res.Kills[len(res.Kills)-1].Resumed = resumed.Sub(killed)
		}
		cfg.Progress("%s dedupe=%t: kill %d/%d at %s, %d of %d done before it, next effect %s after it", cfg.Name, cfg.Dedupe, round, cfg.Kills,
			after.Round(time.Millisecond), done, cfg.Batch, formatResume(res.Kills[len(res.Kills)-1].Resumed))
	}

	// Drain: run until the broker holds nothing for the ledger and every
	// poison payment is dead-lettered.
	p, err := l.start("final")
	if err != nil {
		return res, err
	}
	derr := drain(ctx, broker, source, poison, cfg.RoundTimeout, p)
	res.stopped(p)
	if derr != nil {
		cfg.Progress("%s dedupe=%t: final drain incomplete: %v", cfg.Name, cfg.Dedupe, derr)
	}

	counts, err := w.counts(ctx)
	if err != nil {
		return res, err
	}
	for i := range res.Kills {
		prefix := fmt.Sprintf("%s-r%03d-", runID, i+1)
		for j := range cfg.Batch - 1 {
			n := counts[fmt.Sprintf("%s%05d", prefix, j)]
			switch {
			case n == 0:
				res.Kills[i].Lost++
			case n > 1:
				res.Kills[i].Duplicated++
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

// stopped stops p with SIGTERM and records an unclean exit.
func (r *Result) stopped(p *process) {
	if p.stop(StopTimeoutDefault) {
		return
	}
	r.BadExits++
	r.BadExitLogs = append(r.BadExitLogs, fmt.Sprintf("%s: %v: %s", p.name, p.err, p.tail(3000)))
}

// batch returns n payments: n-1 good ones with IDs prefix00000… and one
// poison payment at a random position.
func batch(prefix string, n int, rnd *rand.Rand) ([]*consumer.Message, string) {
	msgs := make([]*consumer.Message, 0, n)
	for i := range n - 1 {
		acct := fmt.Sprintf("acc-%d", i%50)
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

// ledger starts ledger processes.
type ledger struct {
	cfg  Config
	env  []string
	args []string
}

type process struct {
	cmd     *exec.Cmd
	started time.Time
	exited  chan struct{}
	err     error
	name    string
	log     string
}

func (l *ledger) start(name string) (*process, error) {
	logPath := filepath.Join(l.cfg.LogDir, "ledger-"+name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(l.cfg.Ledger, l.args...)
	cmd.Env = append(os.Environ(), l.env...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("crashtest: starting the ledger: %w", err)
	}
	p := &process{cmd: cmd, started: time.Now(), exited: make(chan struct{}), name: name, log: logPath}
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.exited)
	}()
	return p, nil
}

// kill sends SIGKILL and waits for the process to be gone.
func (p *process) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
}

// stop waits until the ledger logged its start (a SIGTERM before it
// installed its signal handler would kill it, which is not what is tested),
// sends SIGTERM and reports whether the process exited 0 within timeout (it
// is killed otherwise).
func (p *process) stop(timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for !bytes.Contains(p.tail(1<<20), []byte(`"msg":"ledger started"`)) && time.Now().Before(deadline) {
		select {
		case <-p.exited:
			return false
		case <-time.After(20 * time.Millisecond):
		}
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		return p.err == nil
	case <-time.After(timeout):
		p.kill()
		return false
	}
}

// exitedEarly returns an error when the process is gone.
func (p *process) exitedEarly() error {
	select {
	case <-p.exited:
		return fmt.Errorf("the ledger (%s) exited by itself: %v; end of its log:\n%s", p.name, p.err, p.tail(2000))
	default:
		return nil
	}
}

// tail returns the last n bytes of the process's log.
func (p *process) tail(n int) []byte {
	b, _ := os.ReadFile(p.log)
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return bytes.TrimSpace(b)
}

// watcher reads the ledger's effects.
type watcher struct {
	pool   *pgxpool.Pool
	schema string
}

func (w *watcher) table() string { return pgx.Identifier{w.schema, "ledger_entries"}.Sanitize() }

// done counts the distinct message IDs with prefix that have an effect.
func (w *watcher) done(ctx context.Context, prefix string) (int, error) {
	var exists bool
	if err := w.pool.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", w.table()).Scan(&exists); err != nil {
		return 0, err
	}
	if !exists {
		return 0, nil
	}
	var n int
	err := w.pool.QueryRow(ctx, "SELECT count(DISTINCT message_id) FROM "+w.table()+" WHERE starts_with(message_id, $1)", prefix).Scan(&n)
	return n, err
}

// waitDone polls until the batch's good payments all have an effect, and
// returns when it first saw more than since of them (zero if never).
func (w *watcher) waitDone(ctx context.Context, prefix string, batch, since int, timeout time.Duration, p *process) (first time.Time, err error) {
	deadline := time.Now().Add(timeout)
	for {
		n, err := w.done(ctx, prefix)
		if err != nil {
			return first, err
		}
		if n > since && first.IsZero() {
			first = time.Now()
		}
		if n >= batch-1 {
			return first, nil
		}
		if err := p.exitedEarly(); err != nil {
			return first, err
		}
		if time.Now().After(deadline) {
			return first, fmt.Errorf("only %d of %d payments had an effect after %s", n, batch-1, timeout)
		}
		if err := sleep(ctx, 50*time.Millisecond); err != nil {
			return first, err
		}
	}
}

// counts returns the number of ledger entries per message ID.
func (w *watcher) counts(ctx context.Context) (map[string]int, error) {
	rows, err := w.pool.Query(ctx, "SELECT message_id, count(*) FROM "+w.table()+" GROUP BY message_id")
	if err != nil {
		return nil, fmt.Errorf("crashtest: counting effects: %w", err)
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

// drain waits until the broker reports no backlog for the ledger and
// every poison payment is dead-lettered, twice in a row 500ms apart.
func drain(ctx context.Context, b adapters.Broker, source string, poison []string, timeout time.Duration, p *process) error {
	deadline := time.Now().Add(timeout)
	calm := 0
	var last string
	for {
		lines, err := b.Backlog(ctx, source, "ledger")
		if err == nil {
			var lag, dead int64
			for _, l := range lines {
				lag += max(l.Lag, 0)
				dead += max(l.DeadLetters, 0)
			}
			last = fmt.Sprintf("backlog %d, dead letters %d of %d poison", lag, dead, len(poison))
			if lag == 0 && dead >= int64(len(poison)) {
				calm++
			} else {
				calm = 0
			}
			if calm >= 2 {
				return nil
			}
		} else {
			last = err.Error()
		}
		if err := p.exitedEarly(); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not drained after %s: %s", timeout, last)
		}
		if err := sleep(ctx, 500*time.Millisecond); err != nil {
			return err
		}
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
