package postgres_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/oncely/oncely/internal/pgtest"
	pgstore "github.com/oncely/oncely/store/postgres"
)

// BenchmarkClaimsTableSteadyState measures the claims table in its steady
// state, the numbers behind docs/operations.md "Sizing the claims table":
// writers insert claims (consumer "ledger", UUID message IDs, 500 a
// statement, as the store's batch mode writes them) as fast as the server
// takes them while the store's Prune runs every prune interval with a short
// Retention and autovacuum works as configured on the server. It reports
// bytes per claim (table and indexes over rows), the rows kept, the prune
// rate and the insert rate while a prune, an autovacuum of the table, or
// neither runs, and at the end the prune rate with no writer. One run takes
// ONCELY_SIZING_DURATION (default 2m), with ONCELY_SIZING_RETENTION (30s),
// ONCELY_SIZING_PRUNE_INTERVAL (10s) and ONCELY_SIZING_RATE (claims/s in
// all; default 0, as fast as the server takes them):
//
//	go test -run '^$' -bench ClaimsTableSteadyState -benchtime 1x ./store/postgres
func BenchmarkClaimsTableSteadyState(b *testing.B) {
	duration := sizingEnv(b, "ONCELY_SIZING_DURATION", 2*time.Minute)
	retention := sizingEnv(b, "ONCELY_SIZING_RETENTION", 30*time.Second)
	interval := sizingEnv(b, "ONCELY_SIZING_PRUNE_INTERVAL", 10*time.Second)
	rate := 0
	if v := os.Getenv("ONCELY_SIZING_RATE"); v != "" {
		var err error
		if rate, err = strconv.Atoi(v); err != nil {
			b.Fatalf("ONCELY_SIZING_RATE: %v", err)
		}
	}
	for range b.N {
		sizingRun(b, duration, retention, interval, rate)
	}
}

func sizingEnv(b *testing.B, name string, def time.Duration) time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		b.Fatalf("%s: %v", name, err)
	}
	return d
}

// sizingSample is one sampling period's inserts and what ran meanwhile.
type sizingSample struct {
	inserted        int64
	pruning, vacuum bool
}

func sizingRun(b *testing.B, duration, retention, interval time.Duration, rate int) {
	ctx := context.Background()
	db := pgtest.New(b, pgtest.Options{MaxConns: 8})
	st, err := pgstore.New(db.Pool, pgstore.Config{Schema: db.Schema, Retention: retention, NoPruning: true, Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = st.Close(ctx) }()
	table := pgx.Identifier{db.Schema, pgstore.Table}.Sanitize()
	insert := "INSERT INTO " + table + " (consumer, message_id) SELECT 'ledger', unnest($1::text[]) ON CONFLICT DO NOTHING"

	runCtx, stop := context.WithTimeout(ctx, duration)
	defer stop()
	var (
		inserted atomic.Int64
		pruning  atomic.Bool
		wg       sync.WaitGroup
		errs     = make(chan error, 8)
	)
	const writers, batch = 4, 500
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var pace <-chan time.Time
			if rate > 0 {
				t := time.NewTicker(time.Second * batch * writers / time.Duration(rate))
				defer t.Stop()
				pace = t.C
			}
			ids := make([]string, batch)
			var u [16]byte
			for runCtx.Err() == nil {
				if pace != nil {
					select {
					case <-pace:
					case <-runCtx.Done():
						return
					}
				}
				for i := range ids {
					_, _ = rand.Read(u[:])
					ids[i] = fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
				}
				if _, err := db.Pool.Exec(runCtx, insert, ids); err != nil {
					if runCtx.Err() == nil {
						errs <- err
					}
					return
				}
				inserted.Add(int64(len(ids)))
			}
		}()
	}
	var (
		pruned      int64
		pruneTime   time.Duration
		pruneRounds []string
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-runCtx.Done():
				return
			case <-t.C:
			}
			pruning.Store(true)
			start := time.Now()
			n, err := st.Prune(runCtx)
			took := time.Since(start)
			pruning.Store(false)
			if err != nil {
				if runCtx.Err() == nil {
					errs <- err
				}
				return
			}
			pruned += n
			pruneTime += took
			pruneRounds = append(pruneRounds, fmt.Sprintf("%d rows in %v", n, took.Round(10*time.Millisecond)))
		}
	}()

	var (
		samples        []sizingSample
		last           int64
		rowsMin        int64 = -1
		rowsMax, bytes int64
		bytesMax       int64
		perClaim       []float64 // bytes per claim at each size sample
	)
	tick := time.NewTicker(250 * time.Millisecond)
	sizeEvery := 0
	for runCtx.Err() == nil {
		<-tick.C
		var vacuum bool
		if err := db.Pool.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_stat_progress_vacuum WHERE relid = $1::regclass)", table).Scan(&vacuum); err != nil {
			b.Fatal(err)
		}
		now := inserted.Load()
		samples = append(samples, sizingSample{inserted: now - last, pruning: pruning.Load(), vacuum: vacuum})
		last = now
		if sizeEvery++; sizeEvery%8 == 0 { // every 2 s
			var rows int64
			if err := db.Pool.QueryRow(ctx, "SELECT count(*), pg_total_relation_size($1::regclass) FROM "+table, table).Scan(&rows, &bytes); err != nil {
				b.Fatal(err)
			}
			if rows > rowsMax {
				rowsMax = rows
			}
			if rowsMin < 0 || rows < rowsMin {
				rowsMin = rows
			}
			bytesMax = max(bytesMax, bytes)
			if rows > 0 {
				perClaim = append(perClaim, float64(bytes)/float64(rows))
			}
		}
	}
	tick.Stop()
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}

	var rows, tableBytes, indexBytes, autovacuums int64
	defer func() {
		// Every claim is older than a nanosecond: Prune deletes them all,
		// with no writer competing.
		all, err := pgstore.New(db.Pool, pgstore.Config{Schema: db.Schema, Retention: time.Nanosecond, NoPruning: true, Logger: quiet})
		if err != nil {
			b.Fatal(err)
		}
		defer func() { _ = all.Close(ctx) }()
		start := time.Now()
		n, err := all.Prune(ctx)
		if err != nil {
			b.Fatal(err)
		}
		took := time.Since(start)
		b.Logf("prune with no writer: %d rows in %v (%.0f rows/s)", n, took.Round(time.Millisecond), float64(n)/took.Seconds())
	}()
	if err := db.Pool.QueryRow(ctx, "SELECT count(*), pg_table_size($1::regclass), pg_indexes_size($1::regclass) FROM "+table, table).Scan(&rows, &tableBytes, &indexBytes); err != nil {
		b.Fatal(err)
	}
	if err := db.Pool.QueryRow(ctx, "SELECT autovacuum_count FROM pg_stat_user_tables WHERE relid = $1::regclass", table).Scan(&autovacuums); err != nil {
		b.Fatal(err)
	}
	rateOf := func(keep func(sizingSample) bool) (float64, int) {
		var n int64
		var k int
		for _, s := range samples {
			if keep(s) {
				n += s.inserted
				k++
			}
		}
		if k == 0 {
			return 0, 0
		}
		return float64(n) / (float64(k) / 4), k
	}
	quietRate, quietN := rateOf(func(s sizingSample) bool { return !s.pruning && !s.vacuum })
	pruneRate, pruneN := rateOf(func(s sizingSample) bool { return s.pruning })
	vacRate, vacN := rateOf(func(s sizingSample) bool { return s.vacuum && !s.pruning })
	_, vacAll := rateOf(func(s sizingSample) bool { return s.vacuum })
	total := inserted.Load()
	b.Logf("%d claims in %v (%.0f/s), retention %v, prune every %v", total, duration, float64(total)/duration.Seconds(), retention, interval)
	b.Logf("rows kept %d..%d, largest size %d MB; at the end %d rows, table %d MB + indexes %d MB = %.0f bytes/claim",
		rowsMin, rowsMax, bytesMax>>20, rows, tableBytes>>20, indexBytes>>20, float64(tableBytes+indexBytes)/float64(max(rows, 1)))
	b.Logf("bytes/claim over the run (table + indexes over rows, every 2 s): %.0f", perClaim)
	b.Logf("prune: %d rows in %v (%.0f rows/s); rounds: %v", pruned, pruneTime.Round(time.Millisecond), float64(pruned)/max(pruneTime.Seconds(), 1e-9), pruneRounds)
	b.Logf("inserts/s: %.0f with nothing else (%.1fs), %.0f while pruning (%.1fs), %.0f while autovacuum ran alone (%.1fs); %d autovacuums, running %.1fs in all",
		quietRate, float64(quietN)/4, pruneRate, float64(pruneN)/4, vacRate, float64(vacN)/4, autovacuums, float64(vacAll)/4)
	b.ReportMetric(float64(tableBytes+indexBytes)/float64(max(rows, 1)), "bytes/claim")
	b.ReportMetric(float64(pruned)/max(pruneTime.Seconds(), 1e-9), "pruned/s")
	b.ReportMetric(float64(total)/duration.Seconds(), "claims/s")
}
