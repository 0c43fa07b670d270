package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/adapters/rabbitmq"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/envtest"
	"github.com/oncely/oncely/internal/kafkatest"
	"github.com/oncely/oncely/retry"
	"github.com/oncely/oncely/store/postgres"
)

// Benchmarks of batch handlers (issue 18); docs/benchmarks.md has the
// results. Run with:
//
//	go test -run '^$' -bench BenchmarkLedgerKafka -benchtime=1x ./examples/ledger/
//	go test -run '^$' -bench BenchmarkLedgerRabbitMQ -benchtime=1x ./examples/ledger/
//
// with TEST_DATABASE_URL (and RABBITMQ_URL) set. BenchmarkLedgerKafka starts
// kfake in a process of its own (`oncely dev kafka`, kafkatest.Process), fills a
// topic of 6 partitions with 200,000 payments over 1,000 accounts, then
// consumes all of it with (a) serve per message (Concurrency 16), (b) serve
// with -batch, for each size of ONCELY_LEDGER_BENCH_BATCHES (default
// "500,200,1000"), and then ONCELY_LEDGER_BENCH_ROUNDS rounds (default 3) of
// (b) at the fastest size, (c) a hand-written franz-go + pgx loop in one
// goroutine and (c) again with a goroutine per partition of each poll. Each
// run is a fresh consumer group and Postgres schema. BenchmarkLedgerRabbitMQ
// alternates (a) and (b) (batch 500, prefetch=2000 in the URL), each round on
// fresh queues of 50,000 payments. A run ends when every payment has its
// ledger_entries row (polled every 50 ms); its CPU is this process's user+sys
// time over the run: kfake, RabbitMQ and Postgres run in other processes and
// are not counted. ONCELY_LEDGER_BENCH_PAYMENTS changes the number of
// payments; ONCELY_LEDGER_BENCH_NO_A=1 skips (a), to profile the rest;
// ONCELY_LEDGER_BENCH_CONCURRENCY sets (b)'s Concurrency and
// ONCELY_LEDGER_BENCH_PREFETCH its RabbitMQ prefetch (at most 2,000 on quorum queues).
// ONCELY_LEDGER_BENCH_EVENTS=1 runs serve with its ledger.applied events and
// in-process relay (a run still ends when every entry is written);
// ONCELY_LEDGER_BENCH_EVENTS=norelay sends the events without a relay, so
// the run measures what writing them costs the handlers alone.

// benchAccounts is the number of accounts the payments spread over.
const benchAccounts = 1000

// benchRunTimeout bounds one run.
const benchRunTimeout = 10 * time.Minute

// benchRun is one measured consumption.
type benchRun struct {
	mode     string
	consumer string // serve's consumer name
	msgs     int
	wall     time.Duration
	cpu      time.Duration
	// kfakeCPU, pgCPU and rabbitCPU are the CPU time of kfake (Kafka
	// only), of every postgres process and of RabbitMQ (beam.smp) on this
	// machine over the run (other users' load included), read from /proc;
	// informational, not in the metrics.
	kfakeCPU, pgCPU, rabbitCPU time.Duration
	// txs is the number of transactions that wrote entries: distinct
	// created_at values, now() being the transaction's start.
	txs int
}

func (r benchRun) rate() float64 { return float64(r.msgs) / r.wall.Seconds() }

// cpuPerMsg is the CPU µs this process spent per message.
func (r benchRun) cpuPerMsg() float64 { return float64(r.cpu.Microseconds()) / float64(r.msgs) }

func (r benchRun) String() string {
	per := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(r.msgs) }
	return fmt.Sprintf("%s: %d msgs in %.2f s = %.0f msgs/s, CPU %.2f s = %.1f µs/msg; kfake %.1f, postgres %.1f, rabbitmq %.1f µs/msg; %d transactions, %.0f msgs each",
		r.mode, r.msgs, r.wall.Seconds(), r.rate(), r.cpu.Seconds(), r.cpuPerMsg(),
		per(r.kfakeCPU), per(r.pgCPU), per(r.rabbitCPU),
		r.txs, float64(r.msgs)/float64(max(r.txs, 1)))
}

// kfakePID is the kfake process of BenchmarkLedgerKafka, 0 without one.
var kfakePID int

// procTicks is the user+sys CPU time, in clock ticks of 10 ms, of each
// process named postgres or beam.smp (RabbitMQ; key -pid) and of kfake
// (key 0), from /proc.
func procTicks() map[int]int64 {
	out := map[int]int64{}
	read := func(pid int) int64 {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return -1
		}
		// After the command's closing parenthesis: state is the first
		// field, utime the 12th and stime the 13th.
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(fields) < 13 {
			return -1
		}
		u, _ := strconv.ParseInt(fields[11], 10, 64)
		st, _ := strconv.ParseInt(fields[12], 10, 64)
		return u + st
	}
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		comm, err := os.ReadFile("/proc/" + d.Name() + "/comm")
		if err != nil {
			continue
		}
		key := 0
		switch strings.TrimSpace(string(comm)) {
		case "postgres":
			key = pid
		case "beam.smp":
			key = -pid
		default:
			continue
		}
		if t := read(pid); t >= 0 {
			out[key] = t
		}
	}
	if kfakePID != 0 {
		out[0] = read(kfakePID)
	}
	return out
}

// othersCPU is the CPU time kfake, the postgres processes and RabbitMQ
// spent between the snapshots before and after: a process started in
// between counts from zero, one that ended in between counts nothing.
func othersCPU(before, after map[int]int64) (kfake, pg, rabbit time.Duration) {
	var k, p, r int64
	for key, t := range after {
		d := t - before[key]
		switch {
		case key == 0:
			k = d
		case key > 0:
			p += d
		default:
			r += d
		}
	}
	tick := 10 * time.Millisecond
	return time.Duration(k) * tick, time.Duration(p) * tick, time.Duration(r) * tick
}

// cpuTime is the user+sys CPU time this process has used.
func cpuTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchPayment is payment i: account acc-(i mod 1000), 1 to 100 cents.
func benchPayment(prefix string, i int) (id, account string, body []byte) {
	account = "acc-" + strconv.Itoa(i%benchAccounts)
	return prefix + strconv.Itoa(i), account, fmt.Appendf(nil, `{"account":%q,"amount_cents":%d}`, account, i%100+1)
}

// benchSchema creates a fresh schema, dropped when b ends, and returns it
// with the database URL whose search_path is that schema.
func benchSchema(b *testing.B, admin *pgxpool.Pool, dbURL, mode string) (schema, url string) {
	schema = fmt.Sprintf("ledger_bench_%s_%d", mode, rand.Uint32())
	if _, err := admin.Exec(context.Background(), "CREATE SCHEMA "+schema); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := admin.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			b.Logf("dropping schema %s: %v", schema, err)
		}
	})
	sep := "?"
	if strings.Contains(dbURL, "?") {
		sep = "&"
	}
	return schema, dbURL + sep + "search_path=" + schema
}

// waitEntries polls schema's ledger_entries every 50 ms until it has n
// rows and returns the longest time the count stood still; it fails b
// after benchRunTimeout or when stopped says the consumer ended.
func waitEntries(b *testing.B, admin *pgxpool.Pool, schema string, n int, stopped <-chan error) (stall time.Duration) {
	deadline := time.Now().Add(benchRunTimeout)
	last, lastAt := -1, time.Now()
	for {
		// max(id) reads the primary key's last entry, where count(*) scans
		// the table (up to 20 times a second, a load on Postgres that
		// grows with the run); ids have gaps after rollbacks, so count(*)
		// confirms once max(id) reaches n.
		var got int
		err := admin.QueryRow(context.Background(), "SELECT coalesce(max(id), 0) FROM "+schema+".ledger_entries").Scan(&got)
		if err == nil && got >= n {
			err = admin.QueryRow(context.Background(), "SELECT count(*) FROM "+schema+".ledger_entries").Scan(&got)
		}
		if err == nil && got >= n {
			if got > n {
				b.Errorf("%s: %d ledger entries for %d payments", schema, got, n)
			}
			return max(stall, time.Since(lastAt))
		}
		if err == nil && got != last {
			if last > 0 { // the first rows wait for the group join
				stall = max(stall, time.Since(lastAt))
			}
			last, lastAt = got, time.Now()
		}
		if time.Now().After(deadline) {
			b.Fatalf("%s: %d of %d ledger entries after %s (last error: %v)", schema, last, n, benchRunTimeout, err)
		}
		select {
		case err := <-stopped:
			b.Fatalf("%s: the consumer stopped with %d of %d entries: %v", schema, last, n, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// measure runs consume until ledger_entries in schema has n rows, then
// cancels it and waits for it to return (bounded); the run's wall and CPU
// time end at the last row, before the drain. consume's goroutines carry
// the profiler label mode. Each run's line goes to
// stderr at once (the benchmark's log keeps only 10 lines).
func measure(b *testing.B, mode string, admin *pgxpool.Pool, schema string, n int, consume func(ctx context.Context) error) benchRun {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	others0 := procTicks()
	cpu0, t0 := cpuTime(b), time.Now()
	go pprof.Do(ctx, pprof.Labels("mode", mode), func(ctx context.Context) { done <- consume(ctx) }) // -cpuprofile: pprof -tagfocus mode=...
	stall := waitEntries(b, admin, schema, n, done)
	r := benchRun{mode: mode, msgs: n, wall: time.Since(t0), cpu: cpuTime(b) - cpu0}
	r.kfakeCPU, r.pgCPU, r.rabbitCPU = othersCPU(others0, procTicks())
	cancel()
	select {
	case err := <-done:
		if err != nil {
			b.Errorf("%s: %v", mode, err)
		}
	case <-time.After(60 * time.Second):
		b.Fatalf("%s: did not stop within 60 s of its cancel", mode)
	}
	if err := admin.QueryRow(context.Background(), "SELECT count(DISTINCT created_at) FROM "+schema+".ledger_entries").Scan(&r.txs); err != nil {
		b.Errorf("%s: counting transactions: %v", mode, err)
	}
	fmt.Fprintf(os.Stderr, "%s %s (longest stall %s)\n", time.Now().UTC().Format(time.TimeOnly), r, stall.Round(10*time.Millisecond))
	return r
}

// serveRun measures serve on brokerURL's source as a fresh consumer, in a
// fresh schema: batch 0 is the per-message mode.
func serveRun(b *testing.B, admin *pgxpool.Pool, dbURL, brokerURL, source, mode string, batch, n int) benchRun {
	schema, url := benchSchema(b, admin, dbURL, strings.ReplaceAll(mode, "-", "_"))
	concurrency := 16 // the default
	if batch > 1 {
		concurrency = benchEnvInt(b, "ONCELY_LEDGER_BENCH_CONCURRENCY", concurrency) // batches at once
	}
	cfg := config{brokerURL: brokerURL, databaseURL: url, dedupe: true, concurrency: concurrency, batch: batch,
		source: source, consumer: "bench-" + schema, schema: schema, maxAttempts: 3, retryDelay: 200 * time.Millisecond}
	switch os.Getenv("ONCELY_LEDGER_BENCH_EVENTS") {
	case "1":
		cfg.events, cfg.relay = benchEvents(source), true
	case "norelay":
		cfg.events = benchEvents(source)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	r := measure(b, mode, admin, schema, n, func(ctx context.Context) error { return serve(ctx, cfg, log) })
	r.consumer = cfg.consumer
	return r
}

// benchEvents is the destination of source's ledger.applied events when
// ONCELY_LEDGER_BENCH_EVENTS=1 (serve's default is "ledger-applied"; the
// benchmarks run without events unless asked).
func benchEvents(source string) string { return source + "-applied" }

// benchPayments is ONCELY_LEDGER_BENCH_PAYMENTS (for a quick try), else def.
func benchPayments(b *testing.B, def int) int {
	return benchEnvInt(b, "ONCELY_LEDGER_BENCH_PAYMENTS", def)
}

// benchEnvInt is the environment variable name as a number >= 1, else def.
func benchEnvInt(b *testing.B, name string, def int) int {
	spec := os.Getenv(name)
	if spec == "" {
		return def
	}
	n, err := strconv.Atoi(spec)
	if err != nil || n < 1 {
		b.Fatalf("%s=%q: want a number >= 1", name, spec)
	}
	return n
}

// benchBatches are the batch sizes mode (b) tries.
func benchBatches(b *testing.B) []int {
	spec := os.Getenv("ONCELY_LEDGER_BENCH_BATCHES")
	if spec == "" {
		return []int{500, 200, 1000}
	}
	var out []int
	for _, f := range strings.Split(spec, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 2 {
			b.Fatalf("ONCELY_LEDGER_BENCH_BATCHES=%q: want sizes >= 2", spec)
		}
		out = append(out, n)
	}
	return out
}

// best is the fastest run of rs.
func best(rs []benchRun) benchRun {
	return slices.MaxFunc(rs, func(x, y benchRun) int { return cmp.Compare(x.rate(), y.rate()) })
}

func BenchmarkLedgerKafka(b *testing.B) {
	payments := benchPayments(b, 200000)
	dbURL := envtest.Postgres(b)
	admin, err := pgxpool.New(context.Background(), dbURL)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(admin.Close) // registered first: runs after the schemas are dropped
	dev := kafkatest.Process(b)
	kfakePID = dev.PID
	b.Cleanup(func() { kfakePID = 0 })
	addrs := dev.Addrs
	topic := fmt.Sprintf("bench-payments-%d", rand.Uint32())
	fillKafka(b, addrs, topic, payments)
	brokerURL := "kafka://" + strings.Join(addrs, ",") + "?tiers=1s"
	batches := benchBatches(b)
	b.ResetTimer()
	rounds := benchEnvInt(b, "ONCELY_LEDGER_BENCH_ROUNDS", 3)
	skipA := os.Getenv("ONCELY_LEDGER_BENCH_NO_A") == "1" // to profile (b) and (c) alone
	for range b.N {
		var a benchRun
		if !skipA {
			a = serveRun(b, admin, dbURL, brokerURL, topic, "a-per-message", 0, payments)
		}
		var sweep []benchRun
		for _, size := range batches {
			sweep = append(sweep, serveRun(b, admin, dbURL, brokerURL, topic, "b-batch-"+strconv.Itoa(size), size, payments))
		}
		first := best(sweep)
		size, _ := strconv.Atoi(first.mode[strings.LastIndexByte(first.mode, '-')+1:])
		// Rounds of b, c (one goroutine) and c (per partition) at the best
		// size: runs last about 4 s, so one run each would be noise.
		var bs, c1s, cps []benchRun
		var bc1, bcp []float64
		for round := range rounds {
			r := strconv.Itoa(round)
			bs = append(bs, serveRun(b, admin, dbURL, brokerURL, topic, "b-batch-"+strconv.Itoa(size)+"-round-"+r, size, payments))
			c1s = append(c1s, franzPgxRun(b, admin, dbURL, addrs, topic, "c-franz-pgx-1-round-"+r, size, false, payments))
			cps = append(cps, franzPgxRun(b, admin, dbURL, addrs, topic, "c-franz-pgx-per-partition-round-"+r, size, true, payments))
			bc1 = append(bc1, bs[round].rate()/c1s[round].rate())
			bcp = append(bcp, bs[round].rate()/cps[round].rate())
		}
		bb, c1, cp := median(bs), median(c1s), median(cps)
		b.Logf("batch sizes tried: %s; best %d", fmtRuns(sweep), size)
		b.Logf("medians of %d rounds: b %.0f msgs/s (%s), c 1 goroutine %.0f (%s), c per partition %.0f (%s)",
			rounds, bb.rate(), fmtRuns(bs), c1.rate(), fmtRuns(c1s), cp.rate(), fmtRuns(cps))
		b.Logf("per-round b/c: 1 goroutine %s, per partition %s", fmtFloats(bc1), fmtFloats(bcp))
		if !skipA {
			b.Logf("b/a %.1f (median b over a's single run)", bb.rate()/a.rate())
			b.ReportMetric(a.rate(), "a_msgs/s")
			b.ReportMetric(a.cpuPerMsg(), "a_cpu_µs/msg")
			b.ReportMetric(bb.rate()/a.rate(), "b/a")
		}
		b.ReportMetric(bb.rate(), "b_msgs/s")
		b.ReportMetric(c1.rate(), "c_msgs/s")
		b.ReportMetric(cp.rate(), "c_pp_msgs/s")
		b.ReportMetric(bb.cpuPerMsg(), "b_cpu_µs/msg")
		b.ReportMetric(c1.cpuPerMsg(), "c_cpu_µs/msg")
		b.ReportMetric(cp.cpuPerMsg(), "c_pp_cpu_µs/msg")
		b.ReportMetric(medianOf(bc1), "b/c")
		b.ReportMetric(medianOf(bcp), "b/c_pp")
		b.ReportMetric(float64(size), "b_batch")
	}
}

// median is the run of rs with the median rate.
func median(rs []benchRun) benchRun {
	rs = slices.Clone(rs)
	slices.SortFunc(rs, func(x, y benchRun) int { return cmp.Compare(x.rate(), y.rate()) })
	return rs[len(rs)/2]
}

func medianOf(xs []float64) float64 {
	xs = slices.Sorted(slices.Values(xs))
	return xs[len(xs)/2]
}

// fmtRuns lists the runs' rates and CPU per message.
func fmtRuns(rs []benchRun) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = fmt.Sprintf("%s %.0f/s %.1f µs", r.mode, r.rate(), r.cpuPerMsg())
	}
	return strings.Join(parts, ", ")
}

func fmtFloats(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = strconv.FormatFloat(x, 'f', 2, 64)
	}
	return strings.Join(parts, " ")
}

// fillKafka creates topic with 6 partitions and produces n payments into
// it, keyed by account; the topic and the topics the consumers created
// for it are deleted when b ends.
func fillKafka(b *testing.B, addrs []string, topic string, n int) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.ProducerLinger(5*time.Millisecond), kgo.ProducerBatchMaxBytes(1<<20))
	if err != nil {
		b.Fatal(err)
	}
	adm := kadm.NewClient(cl)
	b.Cleanup(func() {
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		md, err := adm.ListTopics(ctx)
		if err != nil {
			b.Logf("listing topics: %v", err)
			return
		}
		var mine []string
		for name := range md {
			if strings.HasPrefix(name, topic) {
				mine = append(mine, name)
			}
		}
		if _, err := adm.DeleteTopics(ctx, mine...); err != nil {
			b.Logf("deleting topics %v: %v", mine, err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 6, 1, nil, topic); err != nil {
		b.Fatal(err)
	}
	const chunk = 10000
	for i := 0; i < n; i += chunk {
		recs := make([]*kgo.Record, 0, chunk)
		for j := i; j < min(i+chunk, n); j++ {
			id, account, body := benchPayment("pay-", j)
			recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(account), Value: body,
				Headers: []kgo.RecordHeader{{Key: consumer.HeaderMessageID, Value: []byte(id)}}})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			b.Fatal(err)
		}
	}
}

// franzPgxRun measures mode (c): a franz-go group consumer and pgx, no
// oncely runtime. Each poll of up to size records is applied as in
// ProcessBatch (BEGIN and the claim in one round trip, applyBatch on the
// claimed payments, COMMIT), and its offsets are committed after the
// database commit. perPartition applies each poll's partitions in
// goroutines of their own, one transaction each; otherwise one goroutine
// applies the poll in one transaction.
func franzPgxRun(b *testing.B, admin *pgxpool.Pool, dbURL string, addrs []string, topic, mode string, size int, perPartition bool, n int) benchRun {
	schema, url := benchSchema(b, admin, dbURL, strings.ReplaceAll(mode, "-", "_"))
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	if err := createTables(ctx, pool); err != nil {
		b.Fatal(err)
	}
	if err := postgres.Migrate(ctx, pool, schema); err != nil {
		b.Fatal(err)
	}
	group := "bench-" + schema
	claimSQL := "INSERT INTO " + pgx.Identifier{schema, postgres.Table}.Sanitize() +
		" (consumer, message_id) SELECT $1, unnest($2::text[]) ON CONFLICT DO NOTHING RETURNING message_id"
	return measure(b, mode, admin, schema, n, func(ctx context.Context) error {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
			kgo.DisableAutoCommit(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		if err != nil {
			return err
		}
		defer cl.Close()
		for {
			fetches := cl.PollRecords(ctx, size)
			if ctx.Err() != nil {
				return nil
			}
			if err := fetches.Err(); err != nil {
				return err
			}
			var err error
			if perPartition {
				var (
					wg   sync.WaitGroup
					mu   sync.Mutex
					errs []error
				)
				fetches.EachPartition(func(p kgo.FetchTopicPartition) {
					wg.Go(func() {
						if err := applyRecords(ctx, pool, claimSQL, group, p.Records); err != nil {
							mu.Lock()
							errs = append(errs, err)
							mu.Unlock()
						}
					})
				})
				wg.Wait()
				if len(errs) > 0 {
					err = errs[0]
				}
			} else {
				err = applyRecords(ctx, pool, claimSQL, group, fetches.Records())
			}
			if ctx.Err() != nil {
				return nil
			}
			if err != nil {
				return err
			}
			if err := cl.CommitRecords(ctx, fetches.Records()...); err != nil && ctx.Err() == nil {
				return err
			}
		}
	})
}

// applyRecords applies recs in one transaction: BEGIN and the claim of
// their sorted, unique IDs in one round trip, then applyBatch on the
// payments claimed now, then COMMIT.
func applyRecords(ctx context.Context, pool *pgxpool.Pool, claimSQL, group string, recs []*kgo.Record) error {
	if len(recs) == 0 {
		return nil
	}
	msgs := make([]*consumer.Message, len(recs))
	ids := make([]string, len(recs))
	for i, r := range recs {
		msgs[i] = &consumer.Message{Key: string(r.Key), Body: r.Value}
		for _, h := range r.Headers {
			if h.Key == consumer.HeaderMessageID {
				msgs[i].ID = string(h.Value)
			}
		}
		ids[i] = msgs[i].ID
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)

	var pb pgx.Batch
	pb.BeginTx(pgx.TxOptions{})
	pb.Queue(claimSQL, group, ids)
	br := pool.SendBatch(ctx, &pb)
	tx := br.Tx()
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	claimed := make(map[string]struct{}, len(ids))
	_, err := br.Exec()
	if err == nil {
		var rows pgx.Rows
		if rows, err = br.Query(); err == nil {
			var id string
			_, err = pgx.ForEachRow(rows, []any{&id}, func() error { claimed[id] = struct{}{}; return nil })
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("claiming %d payments: %w", len(ids), err)
	}
	fresh := msgs[:0:0]
	var payments []payment
	for _, m := range msgs {
		if _, ok := claimed[m.ID]; !ok {
			continue
		}
		delete(claimed, m.ID)
		p, err := parse(m)
		if err != nil {
			return err
		}
		fresh, payments = append(fresh, m), append(payments, p)
	}
	if len(fresh) > 0 {
		if err := applyBatch(ctx, tx, fresh, payments, nil); err != nil {
			return err
		}
	}
	return tx.Commit(ctx)
}

func BenchmarkLedgerRabbitMQ(b *testing.B) {
	payments := benchPayments(b, 50000)
	dbURL := envtest.Postgres(b)
	rabbitURL := envtest.RabbitMQ(b)
	admin, err := pgxpool.New(context.Background(), dbURL)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(admin.Close)
	const size = 500
	// The batch mode's prefetch: the default 128 would cap batches at 128
	// messages; serve's MaxInFlight (4 × batch) holds 2,000.
	sep := "?"
	if strings.Contains(rabbitURL, "?") {
		sep = "&"
	}
	batchURL := rabbitURL + sep + "prefetch=" + strconv.Itoa(benchEnvInt(b, "ONCELY_LEDGER_BENCH_PREFETCH", 4*size))
	rounds := benchEnvInt(b, "ONCELY_LEDGER_BENCH_ROUNDS", 3)
	b.ResetTimer()
	for range b.N {
		var as, bs []benchRun
		skipA := os.Getenv("ONCELY_LEDGER_BENCH_NO_A") == "1"
		for round := range rounds {
			if !skipA {
				queue := fillRabbit(b, rabbitURL, "a", payments)
				as = append(as, serveRun(b, admin, dbURL, rabbitURL, queue, fmt.Sprintf("a-per-message-%d", round), 0, payments))
				deleteRabbitQueues(b, rabbitURL, queue, as[round].consumer)
				deleteRabbitQueues(b, rabbitURL, benchEvents(queue), "")
			}
			queue := fillRabbit(b, rabbitURL, "b", payments)
			bs = append(bs, serveRun(b, admin, dbURL, batchURL, queue, fmt.Sprintf("b-batch-%d-%d", size, round), size, payments))
			deleteRabbitQueues(b, rabbitURL, queue, bs[round].consumer)
			deleteRabbitQueues(b, rabbitURL, benchEvents(queue), "")
		}
		bb := median(bs)
		b.Logf("b: %s", fmtRuns(bs))
		b.ReportMetric(bb.rate(), "b_msgs/s")
		b.ReportMetric(bb.cpuPerMsg(), "b_cpu_µs/msg")
		if skipA {
			continue
		}
		var ratios []string
		for i := range as {
			ratios = append(ratios, fmt.Sprintf("%.1f", bs[i].rate()/as[i].rate()))
		}
		a := median(as)
		b.Logf("a: %s", fmtRuns(as))
		b.Logf("b/a per round: %s; medians' b/a %.1f", strings.Join(ratios, ", "), bb.rate()/a.rate())
		b.ReportMetric(a.rate(), "a_msgs/s")
		b.ReportMetric(a.cpuPerMsg(), "a_cpu_µs/msg")
		b.ReportMetric(bb.rate()/a.rate(), "b/a")
	}
}

// fillRabbit publishes n payments, each with its message_id, to a fresh
// queue and returns its name. The queue is deleted when b ends, unless
// deleteRabbitQueues deleted it before.
func fillRabbit(b *testing.B, rabbitURL, mode string, n int) string {
	queue := fmt.Sprintf("bench-payments-%s-%d", mode, rand.Uint32())
	b.Cleanup(func() { deleteRabbitQueues(b, rabbitURL, queue, "") })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	br, err := adapters.Open(ctx, rabbitURL)
	if err != nil {
		b.Fatal(err)
	}
	defer br.Close()
	const chunk = 5000
	prefix := queue + "-"
	for i := 0; i < n; i += chunk {
		msgs := make([]*consumer.Message, 0, chunk)
		for j := i; j < min(i+chunk, n); j++ {
			id, account, body := benchPayment(prefix, j)
			msgs = append(msgs, &consumer.Message{ID: id, Key: account, Body: body})
		}
		if err := br.Publish(ctx, queue, msgs...); err != nil {
			b.Fatal(err)
		}
	}
	return queue
}

// deleteRabbitQueues deletes queue and, unless consumerName is empty, the
// retry and dead-letter queues serve declared for consumerName.
func deleteRabbitQueues(b *testing.B, rabbitURL, queue, consumerName string) {
	conn, err := amqp.DialConfig(rabbitURL, amqp.Config{Dial: amqp.DefaultDial(10 * time.Second)})
	if err != nil {
		b.Logf("deleting queue %s: %v", queue, err)
		return
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		b.Logf("deleting queue %s: %v", queue, err)
		return
	}
	defer ch.Close()
	names := []string{queue}
	if consumerName != "" {
		names = append(names, rabbitmq.DeadLetterQueue(queue, consumerName))
		for _, d := range retry.DefaultTiers {
			names = append(names, rabbitmq.RetryQueue(queue, consumerName, d))
		}
	}
	for _, q := range names {
		if _, err := ch.QueueDelete(q, false, false, false); err != nil {
			b.Logf("deleting queue %s: %v", q, err)
			return // the channel is closed after an error
		}
	}
	_ = ch.ExchangeDelete(queue+".dlx", false, false)
}
