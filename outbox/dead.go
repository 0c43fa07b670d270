package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oncely/oncely/consumer"
)

// DeadTable is the table of rows the broker refused until Config.Refused's
// attempts ran out (migration 0004_outbox_refused).
const DeadTable = "outbox_dead"

// DeadRow is one row of DeadTable.
type DeadRow struct {
	// Seq is the row's number in the outbox; unique in DeadTable.
	Seq int64
	// Destination is where the row was to be published.
	Destination string
	// Message holds the row's ID, Key, Body and Headers as sent.
	Message *consumer.Message
	// Attempts is how many times the broker refused the row.
	Attempts int
	// Reason is the broker's error at the last refusal (at most 8 KiB).
	Reason string
	// CreatedAt is when the row was sent; DeadAt when it was dead-lettered.
	CreatedAt, DeadAt time.Time
}

// DeadFilter selects rows of DeadTable. The zero value selects every row.
type DeadFilter struct {
	// Destination selects one destination's rows. Default "": every
	// destination.
	Destination string
	// Seqs selects these rows. Default nil: every row.
	Seqs []int64
	// Limit is the most rows selected, the oldest (lowest Seq) first.
	// Default 0: no limit.
	Limit int
}

// DeadLetters lists and redrives the outbox's dead rows of one schema. Safe
// for concurrent use.
type DeadLetters struct {
	pool   *pgxpool.Pool
	table  string
	dead   string
	sender *Sender
}

// NewDeadLetters returns the DeadLetters of schema ("" means
// postgres.SchemaDefault), validated like postgres.Config.Schema.
func NewDeadLetters(pool *pgxpool.Pool, schema string) (*DeadLetters, error) {
	if pool == nil {
		return nil, errors.New("outbox: nil pool")
	}
	s, err := NewSender(schema)
	if err != nil {
		return nil, err
	}
	return &DeadLetters{pool: pool, table: s.table, dead: pgx.Identifier{s.schema, DeadTable}.Sanitize(), sender: s}, nil
}

const deadWhere = `($1 = '' OR destination = $1) AND ($2::bigint[] IS NULL OR seq = ANY($2))
ORDER BY seq LIMIT CASE WHEN $3 > 0 THEN $3 END`

// List returns the rows f selects, lowest Seq first.
func (d *DeadLetters) List(ctx context.Context, f DeadFilter) ([]DeadRow, error) {
	rs, err := d.pool.Query(ctx, `SELECT seq, destination, message_id, msg_key, body, headers, attempts, reason, created_at, dead_at
FROM `+d.dead+` WHERE `+deadWhere, f.Destination, f.Seqs, f.Limit)
	if err != nil {
		return nil, fmt.Errorf("outbox: list dead rows: %w", err)
	}
	defer rs.Close()
	var out []DeadRow
	for rs.Next() {
		var (
			dr      DeadRow
			m       consumer.Message
			headers []byte
		)
		if err := rs.Scan(&dr.Seq, &dr.Destination, &m.ID, &m.Key, &m.Body, &headers, &dr.Attempts, &dr.Reason, &dr.CreatedAt, &dr.DeadAt); err != nil {
			return nil, fmt.Errorf("outbox: list dead rows: %w", err)
		}
		if err := json.Unmarshal(headers, &m.Headers); err != nil {
			return nil, fmt.Errorf("outbox: dead row %d headers: %w", dr.Seq, err)
		}
		m.Partition = -1
		dr.Message = &m
		out = append(out, dr)
	}
	if err := rs.Err(); err != nil {
		return nil, fmt.Errorf("outbox: list dead rows: %w", err)
	}
	return out, nil
}

// Count returns how many rows DeadTable holds.
func (d *DeadLetters) Count(ctx context.Context) (int64, error) {
	var n int64
	if err := d.pool.QueryRow(ctx, "SELECT count(*) FROM "+d.dead).Scan(&n); err != nil {
		return 0, fmt.Errorf("outbox: count dead rows: %w", err)
	}
	return n, nil
}

// Redrive moves the rows f selects back into the outbox, in one
// transaction, and returns how many it moved. Each becomes a new row, as if
// sent again: same ID, destination, Key, Body and Headers, attempts from 0,
// numbered after the rows its key already has (the advisory lock of each
// (destination, Key) taken as SendBatch takes them), so a redriven message
// is published after its key's newer messages: like a broker's dead-letter
// redrive, it gives up its place in the key's order. Relays are notified.
func (d *DeadLetters) Redrive(ctx context.Context, f DeadFilter) (int, error) {
	var moved int
	err := pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error {
		rs, err := tx.Query(ctx, `SELECT seq, destination, msg_key FROM `+d.dead+` WHERE `+deadWhere+` FOR UPDATE`, f.Destination, f.Seqs, f.Limit)
		if err != nil {
			return err
		}
		var (
			seqs  []int64
			locks []string
		)
		seen := map[string]bool{}
		for rs.Next() {
			var (
				seq       int64
				dest, key string
			)
			if err := rs.Scan(&seq, &dest, &key); err != nil {
				rs.Close()
				return err
			}
			seqs = append(seqs, seq)
			if l := sendLockKey(d.sender.schema, dest, key); key != "" && !seen[l] {
				seen[l] = true
				locks = append(locks, l)
			}
		}
		if err := rs.Err(); err != nil {
			return err
		}
		if len(seqs) == 0 {
			return nil
		}
		b := &pgx.Batch{}
		b.Queue(lockAllSQL, locks)
		b.Queue(`WITH moved AS (DELETE FROM `+d.dead+` WHERE seq = ANY($1)
  RETURNING seq, message_id, destination, msg_key, body, headers, cause)
INSERT INTO `+d.table+` (message_id, destination, msg_key, body, headers, cause)
SELECT message_id, destination, msg_key, body, headers, cause FROM moved ORDER BY seq`, seqs)
		b.Queue("SELECT pg_notify($1, '')", d.sender.channel)
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return err
		}
		moved = len(seqs)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("outbox: redrive dead rows: %w", err)
	}
	return moved, nil
}

// Schema is the schema whose dead rows d manages.
func (d *DeadLetters) Schema() string { return d.sender.schema }
