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
)

// AuditEntry is one row of the console_audit table (migrations 0003 and
// 0005).
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
	// Outcome says the action failed or was cancelled. At most
	// maxAuditIDs; Counts["ids_not_recorded"] counts the rest.
	MessageIDs []string
	// Counts are the action's numbers (selected, redriven, deleted, …).
	Counts map[string]int
}

// maxAuditIDs is the most message IDs one audit row records.
const maxAuditIDs = 10_000

// idRecorder wraps a filter's Match to record the IDs it selects, for the
// audit row; safe for concurrent calls.
type idRecorder struct {
	mu      sync.Mutex
	ids     []string
	dropped int
}

func (r *idRecorder) match(f Filter) func(adapters.DeadLetter) bool {
	return func(d adapters.DeadLetter) bool {
		if !f.Match(d) {
			return false
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		if len(r.ids) < maxAuditIDs {
			r.ids = append(r.ids, d.Message.ID)
		} else {
			r.dropped++
		}
		return true
	}
}

// record puts the IDs in e, and the count of those left out in its Counts.
func (r *idRecorder) record(e *AuditEntry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e.MessageIDs = slices.Clone(r.ids)
	if r.dropped > 0 {
		if e.Counts == nil {
			e.Counts = map[string]int{}
		}
		e.Counts["ids_not_recorded"] = r.dropped
	}
}

// auditLog writes and reads the console_audit table.
type auditLog struct {
	pool  *pgxpool.Pool
	table string
}

func newAuditLog(pool *pgxpool.Pool, schema string) auditLog {
	return auditLog{pool: pool, table: pgx.Identifier{schema, "console_audit"}.Sanitize()}
}

// write records e (its ID and At are set by Postgres) and returns its ID.
func (a auditLog) write(ctx context.Context, e AuditEntry) (int64, error) {
	counts, err := json.Marshal(e.Counts)
	if err != nil {
		return 0, err
	}
	if e.Counts == nil {
		counts = []byte("{}")
	}
	ids := e.MessageIDs
	if ids == nil {
		ids = []string{}
	}
	var id int64
	err = a.pool.QueryRow(ctx, "INSERT INTO "+a.table+" (actor, client, session, action, source, consumer, selection, job, outcome, counts, message_ids)"+
		" VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING id",
		e.Actor, e.Client, e.Session, e.Action, e.Source, e.Consumer, e.Selection, e.Job, e.Outcome, counts, ids).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("console: writing the audit row (did oncely migrate run? the table is migrations 0003 and 0005): %w", err)
	}
	return id, nil
}

// latest returns the newest n rows, newest first.
func (a auditLog) latest(ctx context.Context, n int) ([]AuditEntry, error) {
	rows, err := a.pool.Query(ctx, "SELECT id, at, actor, client, session, action, source, consumer, selection, job, outcome, counts, message_ids FROM "+a.table+
		" ORDER BY id DESC LIMIT $1", n)
	if err != nil {
		return nil, fmt.Errorf("console: reading the audit table: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (AuditEntry, error) {
		var e AuditEntry
		var counts []byte
		if err := r.Scan(&e.ID, &e.At, &e.Actor, &e.Client, &e.Session, &e.Action, &e.Source, &e.Consumer, &e.Selection, &e.Job, &e.Outcome, &counts, &e.MessageIDs); err != nil {
			return e, err
		}
		return e, json.Unmarshal(counts, &e.Counts)
	})
	if err != nil {
		return nil, fmt.Errorf("console: reading the audit table: %w", err)
	}
	return out, nil
}
