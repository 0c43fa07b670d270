package crashrun

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
)

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
// returns when it first saw more than since of them (zero if never). It
// fails when one of procs exits by itself.
func (w *watcher) waitDone(ctx context.Context, prefix string, batch, since int, timeout time.Duration, procs []*process) (first time.Time, err error) {
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
		if err := exitedEarly(procs); err != nil {
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
	return countPerID(ctx, w.pool, "SELECT message_id, count(*) FROM "+w.table()+" GROUP BY message_id", "effects")
}

// countPerID runs query, which returns (id, count) rows, into a map; what
// names the rows in its error.
func countPerID(ctx context.Context, pool *pgxpool.Pool, query, what string) (map[string]int, error) {
	rows, err := pool.Query(ctx, query)
	if err != nil {
		return nil, fmt.Errorf("crashtest: counting %s: %w", what, err)
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

// drain waits until the broker reports no backlog for consumerName on
// source and every poison payment is dead-lettered, twice in a row 500ms
// apart. It fails when one of procs exits by itself.
func drain(ctx context.Context, b adapters.Broker, source, consumerName string, poison []string, timeout time.Duration, procs []*process) error {
	deadline := time.Now().Add(timeout)
	calm := 0
	var last string
	for {
		lines, err := b.Backlog(ctx, source, consumerName)
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
		if err := exitedEarly(procs); err != nil {
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
