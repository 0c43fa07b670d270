package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
// already owned; prefixes then drops a key whose lock the scan got only
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

// earlierSQL lists the keyed rows still unpublished before seq $1 that the
// round did not claim ($2).
const earlierSQL = `SELECT destination, msg_key, seq FROM %s
WHERE published_at IS NULL AND seq < $1 AND msg_key <> '' AND seq <> ALL($2)`

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

	rs, err := tx.Query(ctx, fmt.Sprintf(claimSQL, r.table), r.lockPfx, r.cfg.BatchSize)
	if err != nil {
		return 0, fmt.Errorf("claim: %w", err)
	}
	var rows []row
	for rs.Next() {
		var (
			rw      row
			m       consumer.Message
			headers []byte
		)
		if err := rs.Scan(&rw.seq, &m.ID, &rw.destination, &m.Key, &m.Body, &headers, &rw.created); err != nil {
			rs.Close()
			return 0, fmt.Errorf("claim: scan: %w", err)
		}
		if err := json.Unmarshal(headers, &m.Headers); err != nil {
			rs.Close()
			return 0, fmt.Errorf("claim: row %d headers: %w", rw.seq, err)
		}
		m.Partition = -1
		rw.msg = &m
		rows = append(rows, rw)
	}
	if err := rs.Err(); err != nil {
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

// prefixes drops the rows of every key whose claimed rows are not a prefix
// of the key's unpublished rows. The claim's scan can find a key owned by
// another round at one row, skip it, and get the key's lock at a later row
// once that round ended; publishing the later rows would overtake the
// skipped one. The round holds each claimed key's lock now, so an
// unpublished row of the key before its claimed ones can only be such a
// skipped row; the dropped keys' rows stay for a later round.
func (r *Relay) prefixes(ctx context.Context, tx pgx.Tx, rows []row) ([]row, error) {
	type destKey struct{ dest, key string }
	last := map[destKey]int64{}
	var seqs []int64
	var top int64
	for _, rw := range rows {
		if rw.msg.Key == "" {
			continue
		}
		last[destKey{rw.destination, rw.msg.Key}] = rw.seq // rows come in seq order
		seqs = append(seqs, rw.seq)
		top = rw.seq
	}
	if len(seqs) == 0 {
		return rows, nil
	}
	rs, err := tx.Query(ctx, fmt.Sprintf(earlierSQL, r.table), top, seqs)
	if err != nil {
		return nil, fmt.Errorf("claim: check key prefixes: %w", err)
	}
	drop := map[destKey]bool{}
	for rs.Next() {
		var k destKey
		var seq int64
		if err := rs.Scan(&k.dest, &k.key, &seq); err != nil {
			rs.Close()
			return nil, fmt.Errorf("claim: check key prefixes: %w", err)
		}
		if l, ok := last[k]; ok && seq < l {
			drop[k] = true
		}
	}
	if err := rs.Err(); err != nil {
		return nil, fmt.Errorf("claim: check key prefixes: %w", err)
	}
	if len(drop) == 0 {
		return rows, nil
	}
	kept := rows[:0]
	for _, rw := range rows {
		if !drop[destKey{rw.destination, rw.msg.Key}] {
			kept = append(kept, rw)
		}
	}
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
