package outbox

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/oncely/oncely/consumer"
)

// row is one claimed outbox row.
type row struct {
	seq         int64
	destination string
	created     time.Time
	msg         *consumer.Message
}

// claimSQL selects up to $2 unpublished rows in row order, skipping every
// row whose (destination, key) another round owns. The advisory lock is
// taken per row as the ordered scan reaches it, re-entrantly for a key
// already owned; prefixes then re-reads a key whose lock the scan got only
// after skipping one of its rows, so a round gets a prefix of each key's
// unpublished rows.
// An empty key orders nothing: such a row is its own lock. FOR UPDATE
// re-reads a row another round marked meanwhile and drops it.
const claimSQL = `SELECT seq, message_id, destination, msg_key, body, headers, created_at FROM %s
WHERE published_at IS NULL
  AND pg_try_advisory_xact_lock(hashtextextended($1 || destination || E'\n' ||
      CASE WHEN msg_key = '' THEN '#' || seq::text ELSE '=' || msg_key END, 0))
ORDER BY seq
LIMIT $2
FOR UPDATE`

// prefixSQL counts, for each claimed key ($1 destinations, $2 keys) the
// unpublished rows up to the last one the round claimed ($3).
const prefixSQL = `SELECT c.destination, c.msg_key, count(*) FROM %s o
JOIN unnest($1::text[], $2::text[], $3::bigint[]) AS c(destination, msg_key, last)
  ON o.destination = c.destination AND o.msg_key = c.msg_key
WHERE o.published_at IS NULL AND o.seq <= c.last
GROUP BY c.destination, c.msg_key`

// rereadSQL selects, in row order, up to $3 unpublished rows of the keys
// ($1 destinations, $2 keys) the round owns.
const rereadSQL = `SELECT o.seq, o.message_id, o.destination, o.msg_key, o.body, o.headers, o.created_at FROM %s o
JOIN unnest($1::text[], $2::text[]) AS c(destination, msg_key)
  ON o.destination = c.destination AND o.msg_key = c.msg_key
WHERE o.published_at IS NULL
ORDER BY o.seq
LIMIT $3
FOR UPDATE OF o`

// scanRows reads the rows of a claim query.
func scanRows(rs pgx.Rows, err error) ([]row, error) {
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var rows []row
	for rs.Next() {
		var (
			rw      row
			m       consumer.Message
			headers []byte
		)
		if err := rs.Scan(&rw.seq, &m.ID, &rw.destination, &m.Key, &m.Body, &headers, &rw.created); err != nil {
			return nil, fmt.Errorf("scan: %w", err)
		}
		if err := json.Unmarshal(headers, &m.Headers); err != nil {
			return nil, fmt.Errorf("row %d headers: %w", rw.seq, err)
		}
		m.Partition = -1
		rw.msg = &m
		rows = append(rows, rw)
	}
	return rows, rs.Err()
}

// markTimeout bounds marking and committing a published round.
const markTimeout = 10 * time.Second

// round claims up to BatchSize rows, publishes them (one Publish per
// destination, destinations in parallel), marks those the broker confirmed
// and commits. It returns how many rows it claimed. A destination whose
// Publish failed keeps its rows unpublished and makes round fail.
func (r *Relay) round(ctx context.Context) (int, error) {
	tx, err := r.pool.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("begin: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()

	rows, err := scanRows(tx.Query(ctx, fmt.Sprintf(claimSQL, r.table), r.lockPfx, r.cfg.BatchSize))
	if err != nil {
		return 0, fmt.Errorf("claim: %w", err)
	}
	if len(rows) == 0 {
		return 0, tx.Commit(ctx)
	}
	claimed := len(rows)
	if rows, err = r.prefixes(ctx, tx, rows); err != nil {
		return claimed, err
	}
	if len(rows) == 0 {
		return claimed, tx.Commit(ctx)
	}

	done, perr := r.publish(ctx, rows)
	if r.hooks.afterPublish != nil {
		r.hooks.afterPublish(ctx, tx.Conn().PgConn().PID())
	}
	if len(done) > 0 {
		// Mark even when ctx ended meanwhile: the broker has the messages,
		// and a round left unmarked is published again.
		mctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), markTimeout)
		defer cancel()
		if _, err := tx.Exec(mctx, "UPDATE "+r.table+" SET published_at = now() WHERE seq = ANY($1)", done); err != nil {
			return claimed, errors.Join(perr, fmt.Errorf("mark published: %w", err))
		}
		if err := tx.Commit(mctx); err != nil {
			return claimed, errors.Join(perr, fmt.Errorf("commit: %w", err))
		}
		r.metrics.published(len(done))
	}
	if perr != nil {
		r.metrics.failed(len(rows) - len(done))
	}
	return claimed, perr
}

// prefixes replaces the rows of every key whose claimed rows are not a
// prefix of the key's unpublished rows by a fresh read of its first ones. The claim's scan can find a key owned by
// another round at one row, skip it, and get the key's lock at a later row
// once that round ended; publishing the later rows would overtake the
// skipped one. The round holds each claimed key's lock now, so an
// unpublished row of the key before its claimed ones can only be such a
// skipped row; the dropped keys' rows stay for a later round.
func (r *Relay) prefixes(ctx context.Context, tx pgx.Tx, rows []row) ([]row, error) {
	type destKey struct{ dest, key string }
	type claim struct {
		last int64
		n    int64
	}
	claims := map[destKey]*claim{}
	var dests, keys []string
	var lasts []int64
	for _, rw := range rows {
		if rw.msg.Key == "" {
			continue
		}
		k := destKey{rw.destination, rw.msg.Key}
		c, ok := claims[k]
		if !ok {
			c = &claim{}
			claims[k] = c
		}
		c.last = rw.seq // rows come in seq order
		c.n++
	}
	if len(claims) == 0 {
		return rows, nil
	}
	for k, c := range claims {
		dests, keys, lasts = append(dests, k.dest), append(keys, k.key), append(lasts, c.last)
	}
	rs, err := tx.Query(ctx, fmt.Sprintf(prefixSQL, r.table), dests, keys, lasts)
	if err != nil {
		return nil, fmt.Errorf("claim: check key prefixes: %w", err)
	}
	drop := map[destKey]bool{}
	for rs.Next() {
		var k destKey
		var n int64
		if err := rs.Scan(&k.dest, &k.key, &n); err != nil {
			rs.Close()
			return nil, fmt.Errorf("claim: check key prefixes: %w", err)
		}
		if c := claims[k]; c != nil && n > c.n {
			drop[k] = true
		}
	}
	if err := rs.Err(); err != nil {
		return nil, fmt.Errorf("claim: check key prefixes: %w", err)
	}
	if len(drop) == 0 {
		return rows, nil
	}
	// The round owns the dropped keys now: a fresh read of their
	// unpublished rows in row order is a prefix of each.
	var kept []row
	dests, keys = dests[:0], keys[:0]
	for k := range drop {
		dests, keys = append(dests, k.dest), append(keys, k.key)
	}
	for _, rw := range rows {
		if !drop[destKey{rw.destination, rw.msg.Key}] {
			kept = append(kept, rw)
		}
	}
	again, err := scanRows(tx.Query(ctx, fmt.Sprintf(rereadSQL, r.table), dests, keys, len(rows)-len(kept)))
	if err != nil {
		return nil, fmt.Errorf("claim: re-read skipped keys: %w", err)
	}
	kept = append(kept, again...)
	slices.SortFunc(kept, func(a, b row) int { return cmp.Compare(a.seq, b.seq) })
	return kept, nil
}

// publish sends rows, grouped by destination in row order, one Publish call
// per destination, the destinations in parallel. It returns the seqs the
// broker confirmed and the joined errors of the others.
func (r *Relay) publish(ctx context.Context, rows []row) ([]int64, error) {
	var order []string
	byDest := map[string][]row{}
	for _, rw := range rows {
		if _, ok := byDest[rw.destination]; !ok {
			order = append(order, rw.destination)
		}
		byDest[rw.destination] = append(byDest[rw.destination], rw)
	}
	errs := make([]error, len(order))
	var wg sync.WaitGroup
	for i, dest := range order {
		wg.Add(1)
		go func() {
			defer wg.Done()
			group := byDest[dest]
			msgs := make([]*consumer.Message, len(group))
			for j, rw := range group {
				msgs[j] = rw.msg
			}
			pctx, cancel := context.WithTimeout(ctx, r.cfg.PublishTimeout)
			defer cancel()
			if err := r.broker.Publish(pctx, dest, msgs...); err != nil {
				errs[i] = fmt.Errorf("publish %d messages to %s: %w", len(msgs), dest, err)
			}
		}()
	}
	wg.Wait()
	var done []int64
	for i, dest := range order {
		if errs[i] != nil {
			continue
		}
		for _, rw := range byDest[dest] {
			done = append(done, rw.seq)
		}
	}
	return done, errors.Join(errs...)
}
