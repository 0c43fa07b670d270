package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/internal/replayplan"
)

// countClaims counts, per partition, the covered records with a claim of
// plan's consumer in schema (replayplan.Count), showing progress on a
// terminal. It writes nothing.
func countClaims(ctx context.Context, a *app, r adapters.Replayer, plan adapters.ReplayPlan, pool *pgxpool.Pool, schema string) (*replayplan.Claims, error) {
	prog := &replayProgress{w: a.stderr, on: a.stdoutTerminal, what: "counting claims", total: plan.Covered()}
	c, err := replayplan.Count(ctx, r, plan, pool, schema, prog.add)
	prog.finish()
	if err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	return c, nil
}

// reprocessRun are the settings of replay --reprocess.
type reprocessRun struct {
	ask    bool // confirm on the terminal first
	actor  string
	output string
}

// auditAction is the console_audit action of replay --reprocess.
const auditAction = "replay.reprocess"

// runReprocess confirms on the terminal (run.ask), then deletes the claims
// of the records plan covers with an audit row, in one transaction, commits
// the replay's offsets and records the outcome in a second audit row
// (replayplan.Reprocess, which the console's reprocess runs too).
func runReprocess(ctx context.Context, a *app, r adapters.Replayer, plan adapters.ReplayPlan, claims *replayplan.Claims, pool *pgxpool.Pool, schema string, run reprocessRun) error {
	if run.ask {
		fmt.Fprintf(a.stderr, "Rewind consumer %s of %s to %s (%d records) and delete the claims of those records (%d exist), so their handlers run again? [y/N] ",
			safeLine(plan.Consumer), safeLine(plan.Source), safeLine(plan.To), plan.Covered(), claims.Total)
		answer, _ := bufio.NewReader(a.stdin).ReadString('\n')
		if ans := strings.ToLower(strings.TrimSpace(answer)); ans != "y" && ans != "yes" {
			fmt.Fprintln(a.stdout, "not confirmed; nothing changed")
			return nil
		}
	}
	if run.actor == "" {
		run.actor = cmp.Or(a.getenv("USER"), "unknown")
	}
	rec := &cliRecorder{pool: pool, schema: schema, row: auditRow{actor: run.actor, client: cliClient(), source: plan.Source, consumer: plan.Consumer,
		selection: "to " + plan.To, counts: map[string]int{"covered": int(plan.Covered())}}}
	prog := &replayProgress{w: a.stderr, on: a.stdoutTerminal, what: "deleting claims", total: plan.Covered()}
	deleted, auditID, err := replayplan.Reprocess(ctx, r, plan, pool, schema, rec, prog.add)
	prog.finish()
	if err != nil {
		return fmt.Errorf("replay --reprocess: %w", err)
	}
	if run.output == "json" {
		doc := replayDoc(plan, claims, "done")
		doc.ClaimsDeleted, doc.AuditID = &deleted, auditID
		return writeJSON(a.stdout, doc)
	}
	if err := writeReplayPlan(a.stdout, "text", plan, claims, "done", "rewound: the consumer runs the covered records again when it starts"); err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "deleted %d claims (audit row %d)\n", deleted, auditID)
	return nil
}

// cliRecorder writes replay --reprocess's console_audit rows.
type cliRecorder struct {
	pool   *pgxpool.Pool
	schema string
	row    auditRow
}

func (c *cliRecorder) Deleted(ctx context.Context, tx pgx.Tx, deleted int64, ids []string, notRecorded int) (int64, error) {
	row := c.row
	row.ids, row.outcome = ids, "claims deleted"
	row.counts = map[string]int{"covered": row.counts["covered"], "claims_deleted": int(deleted)}
	if notRecorded > 0 {
		row.counts["ids_not_recorded"] = notRecorded
	}
	return writeAudit(ctx, tx, c.schema, row)
}

func (c *cliRecorder) Committed(ctx context.Context, auditID int64, cerr error) error {
	end := c.row
	end.counts, end.outcome = map[string]int{"audit_row": int(auditID)}, "done: offsets committed"
	if cerr != nil {
		end.outcome = "failed: " + cerr.Error()
	}
	return writeAuditRow(ctx, c.pool, c.schema, end)
}

// writeAuditRow writes row in a transaction of its own.
func writeAuditRow(ctx context.Context, pool *pgxpool.Pool, schema string, row auditRow) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		_, err := writeAudit(ctx, tx, schema, row)
		return err
	})
}

// auditRow is the console_audit row of a replay --reprocess.
type auditRow struct {
	actor, client, source, consumer, selection, outcome string
	counts                                              map[string]int
	ids                                                 []string
}

// writeAudit inserts row in schema's console_audit table within tx and
// returns its ID.
func writeAudit(ctx context.Context, tx pgx.Tx, schema string, row auditRow) (int64, error) {
	counts, err := json.Marshal(row.counts)
	if err != nil {
		return 0, err
	}
	if row.ids == nil {
		row.ids = []string{}
	}
	var id int64
	err = tx.QueryRow(ctx, "INSERT INTO "+pgx.Identifier{schema, "console_audit"}.Sanitize()+
		" (actor, client, action, source, consumer, selection, outcome, counts, message_ids) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id",
		row.actor, row.client, auditAction, row.source, row.consumer, row.selection, row.outcome, counts, row.ids).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("writing the audit row (did oncely migrate run? the table is migrations 0003 and 0005): %w", err)
	}
	return id, nil
}

// cliClient names where a CLI action came from, for the audit row.
func cliClient() string {
	host, _ := os.Hostname()
	return "oncely replay on " + host
}
