// Package replayplan counts, before a replay of a log broker's consumer,
// how many of the records the rewind covers already have an idempotency
// claim of the consumer (their handler committed: with deduplication on,
// the rewound consumer skips them). It writes nothing. The oncely replay
// command and the console both use it.
package replayplan

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/store/postgres"
)

// ChunkSize is how many message IDs one claims query takes, as dlq redrive
// --plan (postgres.Store.Claimed).
const ChunkSize = 10_000

// parallelQueries is how many claims queries Count runs at once, while the
// next IDs are read.
const parallelQueries = 4

// ErrNoClaimsTable wraps a failure to read the claims table.
var ErrNoClaimsTable = errors.New("reading the idempotency claims (did oncely migrate run?)")

// Claims counts the covered records with a claim of a replay's consumer.
type Claims struct {
	// PerPartition has an entry for every partition of the plan, 0 when
	// none of its covered records has a claim.
	PerPartition map[int32]int64
	Total        int64
}

// ClaimsTable is the sanitized name of the claims table in schema.
func ClaimsTable(schema string) string { return pgx.Identifier{schema, postgres.Table}.Sanitize() }

// EachIDChunk reads the message IDs of the records plan covers and calls fn
// with chunks of at most ChunkSize IDs of one partition, in each
// partition's order. progress, when not nil, is called with the number of
// IDs read as they arrive. An error of fn ends the reading and is returned.
func EachIDChunk(ctx context.Context, r adapters.Replayer, plan adapters.ReplayPlan, progress func(n int), fn func(partition int32, ids []string) error) error {
	pending := map[int32][]string{}
	err := r.ReplayIDs(ctx, plan, func(partition int32, ids []string) error {
		if progress != nil {
			progress(len(ids))
		}
		buf := append(pending[partition], ids...)
		for len(buf) >= ChunkSize {
			if err := fn(partition, buf[:ChunkSize]); err != nil {
				return err
			}
			buf = buf[ChunkSize:]
		}
		pending[partition] = buf
		return nil
	})
	if err != nil {
		return err
	}
	for _, p := range plan.Partitions {
		if ids := pending[p.Partition]; len(ids) > 0 {
			if err := fn(p.Partition, ids); err != nil {
				return err
			}
		}
	}
	return nil
}

// countQuery selects the claims of consumer $1 among the IDs $2 (Count
// counts them, Reprocess deletes them). The
// planner answers it with an index-only scan of the claims' primary key
// (consumer, message_id), one lookup per ID. An unnest($2) join measured
// slower (BenchmarkReplayPlan, docs/benchmarks.md), and a temporary table
// of all IDs with one join scans every claim of the consumer.
const countQuery = " WHERE consumer = $1 AND message_id = ANY($2::text[])"

// Count counts, per partition, the records plan covers with a claim of
// plan's consumer in schema's claims table, one query per ChunkSize IDs,
// up to 4 at a time while the next IDs are read. progress is as
// EachIDChunk's. It writes nothing; a failing query is returned wrapping
// ErrNoClaimsTable.
func Count(ctx context.Context, r adapters.Replayer, plan adapters.ReplayPlan, pool *pgxpool.Pool, schema string, progress func(n int)) (*Claims, error) {
	c := &Claims{PerPartition: map[int32]int64{}}
	for _, p := range plan.Partitions {
		c.PerPartition[p.Partition] = 0
	}
	q := "SELECT count(*) FROM " + ClaimsTable(schema) + countQuery
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		qerr error
		slot = make(chan struct{}, parallelQueries)
	)
	err := EachIDChunk(ctx, r, plan, progress, func(partition int32, ids []string) error {
		mu.Lock()
		err := qerr
		mu.Unlock()
		if err != nil {
			return err
		}
		slot <- struct{}{}
		wg.Go(func() {
			defer func() { <-slot }()
			var n int64
			err := pool.QueryRow(ctx, q, plan.Consumer, ids).Scan(&n)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				qerr = cmp.Or(qerr, fmt.Errorf("%w: %w", ErrNoClaimsTable, err))
				return
			}
			c.PerPartition[partition] += n
			c.Total += n
		})
		return nil
	})
	wg.Wait()
	if err = cmp.Or(err, qerr); err != nil {
		return nil, err
	}
	return c, nil
}
