package console

import (
	"context"
	"fmt"
	"net/http"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/internal/replayplan"
)

// reprocess runs replayplan.Reprocess for plan, as oncely replay
// --reprocess does: the claims of exactly the covered records deleted in
// one transaction with an audit row (action replay.reprocess), then the
// offsets committed and the outcome recorded in a second row. It redirects
// to the first row.
func (s *Server) reprocess(w http.ResponseWriter, r *http.Request, rp adapters.Replayer, plan adapters.ReplayPlan) error {
	id := who(r)
	rec := &auditRecorder{audit: s.audit, covered: int(plan.Covered()), entry: AuditEntry{Actor: id.user, Client: id.client,
		Session: s.sessions.ref(id.session), Action: actionReprocess, Source: plan.Source, Consumer: plan.Consumer, Selection: "to " + plan.To}}
	_, row, err := replayplan.Reprocess(r.Context(), rp, plan, s.cfg.Pool, s.cfg.Schema, rec, nil)
	if err != nil { // replayplan.ErrNothingChanged, or a *replayplan.NotCommittedError
		return fmt.Errorf("reprocess of %s: %w", plan.Consumer, err)
	}
	http.Redirect(w, r, "/audit/"+strconv.FormatInt(row, 10), http.StatusSeeOther)
	return nil
}

// auditRecorder writes a console reprocess's audit rows.
type auditRecorder struct {
	audit   auditLog
	entry   AuditEntry
	covered int
}

func (a *auditRecorder) Deleted(ctx context.Context, tx pgx.Tx, deleted int64, ids []string, notRecorded int) (int64, error) {
	e := a.entry
	e.Outcome, e.MessageIDs = "claims deleted", ids
	e.Counts = map[string]int{"covered": a.covered, "claims_deleted": int(deleted)}
	if notRecorded > 0 {
		e.Counts["ids_not_recorded"] = notRecorded
	}
	return a.audit.writeTx(ctx, tx, e)
}

func (a *auditRecorder) Committed(ctx context.Context, auditID int64, cerr error) error {
	e := a.entry
	e.Outcome, e.Counts = "done: offsets committed", map[string]int{"audit_row": int(auditID)}
	if cerr != nil {
		e.Outcome = "failed: " + cerr.Error()
	}
	_, err := a.audit.write(ctx, e)
	return err
}
