package outbox

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/oncely/oncely/consumer"
)

// row is one claimed outbox row.
type row struct {
	seq         int64
	destination string
	created     time.Time
	attempts    int // refusals so far
	msg         *consumer.Message
}

// A round claims keys first and rows second, in three statements of its
// transaction:
//
//  1. windowSQL reads the owners of the first Workers × BatchSize ready
//     rows: each (destination, key), or the row itself when its key is
//     empty (such a row orders nothing), with its rows in the window, in the
//     order of its first row.
//  2. lockSQL tries the advisory lock of each owner, in that order, until
//     the owned ones cover BatchSize window rows; an owner another round
//     holds is skipped whole.
//  3. rowsSQL reads the owned owners' ready rows in row order, up to
//     BatchSize, in a statement that starts after every lock was taken.
//
// Its snapshot therefore sees every commit of a round that held one of
// those locks before, so each key's rows are the first of its unpublished
// rows: a key is published in commit order (Send numbers a key's rows in
// commit order) and a row marked by an earlier round is not read again. A
// round that finds every owner of the window held ends at once, without
// scanning the rest of the outbox.
//
// A ready row is unpublished, not of a destination the relay holds ($2 of
// windowSQL), and not of a key whose refused row waits for its retry_at
// (readySQL): a key's first unpublished row is its refused row, so its
// later rows wait behind it; a refused row of an empty key holds only
// itself. rowsSQL checks readiness again, as a round that owned the key
// before may have refused its row since the window was read.
const (
	readySQL = `NOT EXISTS (SELECT 1 FROM %[1]s b WHERE b.published_at IS NULL AND b.retry_at > now()
    AND b.destination = o.destination AND b.msg_key = o.msg_key AND (o.msg_key <> '' OR b.seq = o.seq))`
	windowSQL = `SELECT destination, msg_key, min(seq), count(*) FROM (
  SELECT seq, destination, msg_key FROM %[1]s o
  WHERE published_at IS NULL AND destination <> ALL($2::text[]) AND ` + readySQL + `
  ORDER BY seq LIMIT $1) w
GROUP BY destination, msg_key, CASE WHEN msg_key = '' THEN seq END
ORDER BY min(seq)`
	lockSQL = `SELECT i FROM unnest($1::text[]) WITH ORDINALITY AS c(name, i)
WHERE pg_try_advisory_xact_lock(hashtextextended(c.name, 0))`
	rowsSQL = `SELECT seq, message_id, destination, msg_key, body, headers, created_at, attempts FROM %[1]s o
WHERE published_at IS NULL
  AND ((destination, msg_key) IN (SELECT * FROM unnest($1::text[], $2::text[])) OR seq = ANY($3))
  AND ` + readySQL + `
ORDER BY seq
LIMIT $4`
)

// owner is what one advisory lock orders: a (destination, key), or one row
// (seq) whose key is empty.
type owner struct {
	destination, key string
	seq              int64 // the first row in the window; the row itself for an empty key
	rows             int   // its rows in the window
}

// lockName is the advisory lock's name, hashed by hashtextextended(·, 0).
// Relays of the same schema share it, so rounds of different relays exclude
// each other too.
func (r *Relay) lockName(o owner) string {
	if o.key == "" {
		return fmt.Sprintf("%s%s\n#%d", r.lockPfx, o.destination, o.seq)
	}
	return r.lockPfx + o.destination + "\n=" + o.key
}

// claim takes the owners of the next rows and returns those rows. more
// reports that the window held owners nobody was asked to take: rows
// another worker could claim now.
func (r *Relay) claim(ctx context.Context, tx pgx.Tx) (rows []row, more bool, err error) {
	owners, err := r.window(ctx, tx, r.holds.held(time.Now()))
	if err != nil || len(owners) == 0 {
		return nil, false, err
	}
	if r.hooks.afterWindow != nil {
		r.hooks.afterWindow(ctx)
	}
	var ds, ks []string // the owned keys' destinations and keys
	var single []int64  // the owned rows of empty keys
	covered, next, chunk := 0, 0, 1
	for covered < r.cfg.BatchSize && next < len(owners) {
		// Ask for enough owners to fill the batch if all are free, and at
		// least twice as many as last time: a window of held keys takes a
		// few statements, not one per key.
		end, need := next, 0
		for end < len(owners) && (need < r.cfg.BatchSize-covered || end-next < chunk) {
			need += owners[end].rows
			end++
		}
		chunk = 2 * (end - next)
		names := make([]string, 0, end-next)
		for _, o := range owners[next:end] {
			names = append(names, r.lockName(o))
		}
		got, err := r.lock(ctx, tx, names)
		if err != nil {
			return nil, false, err
		}
		for _, i := range got {
			o := owners[next+i]
			covered += o.rows
			if o.key == "" {
				single = append(single, o.seq)
			} else {
				ds, ks = append(ds, o.destination), append(ks, o.key)
			}
		}
		next = end
	}
	more = next < len(owners)
	if covered == 0 {
		return nil, more, nil
	}
	rows, err = r.read(ctx, tx, ds, ks, single)
	return rows, more, err
}

// window reads the owners of the first Workers × BatchSize ready rows
// outside the held destinations, in the order of their first row.
func (r *Relay) window(ctx context.Context, tx pgx.Tx, held []string) ([]owner, error) {
	if held == nil {
		held = []string{}
	}
	rs, err := tx.Query(ctx, fmt.Sprintf(windowSQL, r.table), r.cfg.Workers*r.cfg.BatchSize, held)
	if err != nil {
		return nil, fmt.Errorf("claim: window: %w", err)
	}
	var owners []owner
	for rs.Next() {
		var o owner
		if err := rs.Scan(&o.destination, &o.key, &o.seq, &o.rows); err != nil {
			rs.Close()
			return nil, fmt.Errorf("claim: window: %w", err)
		}
		owners = append(owners, o)
	}
	if err := rs.Err(); err != nil {
		return nil, fmt.Errorf("claim: window: %w", err)
	}
	return owners, nil
}

// lock tries the advisory locks named, in order, and returns the indexes
// (from 0) of those it took.
func (r *Relay) lock(ctx context.Context, tx pgx.Tx, names []string) ([]int, error) {
	rs, err := tx.Query(ctx, lockSQL, names)
	if err != nil {
		return nil, fmt.Errorf("claim: lock keys: %w", err)
	}
	var got []int
	for rs.Next() {
		var i int
		if err := rs.Scan(&i); err != nil {
			rs.Close()
			return nil, fmt.Errorf("claim: lock keys: %w", err)
		}
		got = append(got, i-1)
	}
	if err := rs.Err(); err != nil {
		return nil, fmt.Errorf("claim: lock keys: %w", err)
	}
	return got, nil
}

// read returns the ready rows of the owned keys (destinations ds,
// keys ks) and owned single rows, in row order, up to BatchSize.
func (r *Relay) read(ctx context.Context, tx pgx.Tx, ds, ks []string, single []int64) ([]row, error) {
	rs, err := tx.Query(ctx, fmt.Sprintf(rowsSQL, r.table), ds, ks, single, r.cfg.BatchSize)
	if err != nil {
		return nil, fmt.Errorf("claim: read rows: %w", err)
	}
	defer rs.Close()
	var rows []row
	for rs.Next() {
		var (
			rw      row
			m       consumer.Message
			headers []byte
		)
		if err := rs.Scan(&rw.seq, &m.ID, &rw.destination, &m.Key, &m.Body, &headers, &rw.created, &rw.attempts); err != nil {
			return nil, fmt.Errorf("claim: read rows: %w", err)
		}
		if err := json.Unmarshal(headers, &m.Headers); err != nil {
			return nil, fmt.Errorf("claim: row %d headers: %w", rw.seq, err)
		}
		m.Partition = -1
		rw.msg = &m
		rows = append(rows, rw)
	}
	if err := rs.Err(); err != nil {
		return nil, fmt.Errorf("claim: read rows: %w", err)
	}
	return rows, nil
}
