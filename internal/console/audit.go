package console

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oncely/oncely/adapters"
)

// Audit actions.
const (
	actionRedriveStart = "redrive.start"
	actionRedriveEnd   = "redrive.end"
	actionDelete       = "delete"
	actionCancel       = "redrive.cancel"
	actionReplay       = "replay"
	actionReprocess    = "replay.reprocess" // as oncely replay --reprocess
)

// AuditEntry is one row of the console_audit table (migrations 0003,
// 0005 and 0006).
type AuditEntry struct {
	ID    int64
	At    time.Time
	Actor string
	// Client is the address the action came from (behind a trusted
	// proxy, the forwarded client); "" on rows older than migration 0005.
	Client string
	// Session refers to the login session that acted: an HMAC of its ID,
	// not the ID, so the table holds no credential.
	Session  string
	Action   string
	Source   string
	Consumer string
	// Selection is the filter the action applied (Filter.String).
	Selection string
	// Job is the redrive job's ID, "" for other actions.
	Job string
	// Outcome is "started", "done", "cancelled", "failed: …".
	Outcome string
	// MessageIDs are the message IDs a delete or redrive selected, in the
	// order the broker listed them: each was deleted or redriven unless
	// Outcome says the action failed or was cancelled. Writing records
	// every one; rows read for a list hold the first auditPreviewIDs (see
	// auditLog.messageIDs for all).
	MessageIDs []string
	// MessageCount is how many message IDs the row records; rows older
	// than migration 0006 recorded at most 10,000, and
	// Counts["ids_not_recorded"] counts the rest.
	MessageCount int
	// Counts are the action's numbers (selected, redriven, deleted, …).
	Counts map[string]int
}

// Audit row sizes.
const (
	// maxAuditIDs is the most message IDs the console_audit row itself
	// holds; console_audit_messages holds the rest.
	maxAuditIDs = 10_000
	// auditPreviewIDs is how many message IDs a row shows on the audit
	// page; its own page lists them all.
	auditPreviewIDs = 20
	// auditIDsPage is how many message IDs one page of a row's IDs lists.
	auditIDsPage = 1000
)

// idRecorder wraps a filter's Match to record the IDs it selects, every
// one, for the audit row; safe for concurrent calls.
type idRecorder struct {
	mu  sync.Mutex
	ids []string
}

func (r *idRecorder) match(f Filter) func(adapters.DeadLetter) bool {
	return func(d adapters.DeadLetter) bool {
		if !f.Match(d) {
			return false
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		r.ids = append(r.ids, d.Message.ID)
		return true
	}
}

// record puts the IDs in e.
func (r *idRecorder) record(e *AuditEntry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e.MessageIDs = slices.Clone(r.ids)
}

// auditLog writes and reads the console_audit table and its message IDs
// (console_audit_messages).
type auditLog struct {
	pool     *pgxpool.Pool
	schema   string
	table    string
	messages string
	// inline is the most message IDs the row itself holds: maxAuditIDs.
	inline int
}

func newAuditLog(pool *pgxpool.Pool, schema string) auditLog {
	return auditLog{pool: pool, schema: schema, table: pgx.Identifier{schema, "console_audit"}.Sanitize(),
		messages: pgx.Identifier{schema, "console_audit_messages"}.Sanitize(), inline: maxAuditIDs}
}

// write records e and every one of its MessageIDs in one transaction (its
// ID and At are set by Postgres) and returns its ID: the row holds the
// first a.inline IDs, console_audit_messages the others.
func (a auditLog) write(ctx context.Context, e AuditEntry) (int64, error) {
	var id int64
	err := pgx.BeginFunc(ctx, a.pool, func(tx pgx.Tx) (err error) {
		id, err = a.writeTx(ctx, tx, e)
		return err
	})
	return id, err
}

// writeTx inserts e within tx, as write does, and returns its ID.
func (a auditLog) writeTx(ctx context.Context, tx pgx.Tx, e AuditEntry) (int64, error) {
	counts, err := json.Marshal(e.Counts)
	if err != nil {
		return 0, err
	}
	if e.Counts == nil {
		counts = []byte("{}")
	}
	inline, rest := e.MessageIDs[:min(len(e.MessageIDs), a.inline)], e.MessageIDs[min(len(e.MessageIDs), a.inline):]
	if inline == nil {
		inline = []string{}
	}
	var id int64
	err = tx.QueryRow(ctx, "INSERT INTO "+a.table+" (actor, client, session, action, source, consumer, selection, job, outcome, counts, message_ids)"+
		" VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING id",
		e.Actor, e.Client, e.Session, e.Action, e.Source, e.Consumer, e.Selection, e.Job, e.Outcome, counts, inline).Scan(&id)
	if err == nil && len(rest) > 0 {
		_, err = tx.CopyFrom(ctx, pgx.Identifier{a.schema, "console_audit_messages"}, []string{"audit_id", "seq", "message_id"},
			pgx.CopyFromSlice(len(rest), func(i int) ([]any, error) { return []any{id, len(inline) + i + 1, rest[i]}, nil }))
	}
	if err != nil {
		return 0, fmt.Errorf("console: writing the audit row (did oncely migrate run? the tables are migrations 0003, 0005 and 0006): %w", err)
	}
	return id, nil
}

// latest returns the newest n rows, newest first, each with its first
// auditPreviewIDs message IDs.
func (a auditLog) latest(ctx context.Context, n int) ([]AuditEntry, error) {
	return a.read(ctx, "ORDER BY id DESC LIMIT $2", n)
}

// entry returns audit row id, with its first auditPreviewIDs message IDs;
// ok is false when there is no such row.
func (a auditLog) entry(ctx context.Context, id int64) (e AuditEntry, ok bool, err error) {
	rows, err := a.read(ctx, "WHERE id = $2", id)
	if err != nil || len(rows) == 0 {
		return e, false, err
	}
	return rows[0], true, nil
}

// read returns the rows that the SQL clause after FROM selects, with $2
// (and on) as args, each with its first auditPreviewIDs message IDs.
func (a auditLog) read(ctx context.Context, clause string, args ...any) ([]AuditEntry, error) {
	rows, err := a.pool.Query(ctx, "SELECT id, at, actor, client, session, action, source, consumer, selection, job, outcome, counts,"+
		" message_ids[1:$1], cardinality(message_ids) + (SELECT count(*) FROM "+a.messages+" m WHERE m.audit_id = a.id)"+
		" FROM "+a.table+" a "+clause, append([]any{auditPreviewIDs}, args...)...)
	if err != nil {
		return nil, fmt.Errorf("console: reading the audit table: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (AuditEntry, error) {
		var e AuditEntry
		var counts []byte
		if err := r.Scan(&e.ID, &e.At, &e.Actor, &e.Client, &e.Session, &e.Action, &e.Source, &e.Consumer, &e.Selection, &e.Job, &e.Outcome,
			&counts, &e.MessageIDs, &e.MessageCount); err != nil {
			return e, err
		}
		return e, json.Unmarshal(counts, &e.Counts)
	})
	if err != nil {
		return nil, fmt.Errorf("console: reading the audit table: %w", err)
	}
	return out, nil
}

// messageIDs returns up to n of the message IDs audit row id records, in
// order, from the one after the after-th on; more reports whether others
// follow.
func (a auditLog) messageIDs(ctx context.Context, id int64, after, n int) (ids []string, more bool, err error) {
	rows, err := a.pool.Query(ctx, "SELECT message_id FROM ("+
		" SELECT u.seq, u.message_id FROM "+a.table+" a, unnest(a.message_ids) WITH ORDINALITY AS u(message_id, seq) WHERE a.id = $1"+
		" UNION ALL SELECT seq, message_id FROM "+a.messages+" WHERE audit_id = $1) ids"+
		" WHERE seq > $2 ORDER BY seq LIMIT $3", id, after, n+1)
	if err != nil {
		return nil, false, fmt.Errorf("console: reading the message IDs of audit row %d: %w", id, err)
	}
	ids, err = pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, false, fmt.Errorf("console: reading the message IDs of audit row %d: %w", id, err)
	}
	if len(ids) > n {
		return ids[:n], true, nil
	}
	return ids, false, nil
}
