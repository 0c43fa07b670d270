package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/oncely/oncely/adapters"
)

// replayConfirmWord is what a rewind needs typed in its confirmation field.
const replayConfirmWord = "rewind"

// reprocessConfirmWord is what a rewind that also forgets the claims of the
// range (the form's reprocess field) needs typed.
const reprocessConfirmWord = "reprocess"

// rewind commits the replay the form's "to" plans for the consumer (the
// console must not be read-only; the form carries the CSRF token and the
// typed replayConfirmWord), refused while the consumer group has live
// members, and records it in the audit table, failed or not. With the
// form's reprocess field (and reprocessConfirmWord typed) it also forgets
// the claims of exactly the covered records, as oncely replay --reprocess
// does (see reprocess); otherwise the claims stay. It redirects to the
// audit row.
func (s *Server) rewind(w http.ResponseWriter, r *http.Request) error {
	t := targetOf(r)
	rp, ok := adapters.AsReplayer(s.cfg.Broker)
	if !ok {
		return httpErrorf(http.StatusBadRequest, "replay does not apply to %s: it is a queue; redrive dead letters instead", s.cfg.Broker.Kind())
	}
	reprocess := r.PostFormValue("reprocess") != ""
	word := replayConfirmWord
	if reprocess {
		word = reprocessConfirmWord
	}
	if strings.TrimSpace(r.PostFormValue("confirm")) != word {
		return httpErrorf(http.StatusBadRequest, "type %q in the confirmation field to rewind; nothing was changed", word)
	}
	to, err := adapters.ParseReplayTarget(r.PostFormValue("to"))
	if err != nil {
		return httpErrorf(http.StatusBadRequest, "to: %v; nothing was changed", err)
	}
	plan, err := rp.PlanReplay(r.Context(), t.Source, t.Consumer, to)
	if errors.Is(err, adapters.ErrNoSource) {
		return httpErrorf(http.StatusNotFound, "%v", err)
	}
	if errors.Is(err, adapters.ErrNoConsumer) {
		return noConsumer(err, s.cfg.Broker.Kind())
	}
	if err != nil {
		return err
	}
	if len(plan.Members) > 0 {
		return httpErrorf(http.StatusConflict, "the consumer has %d live members (%s): stop every instance of it first; nothing was changed",
			len(plan.Members), strings.Join(plan.Members, ", "))
	}
	if reprocess {
		return s.reprocess(w, r, rp, plan)
	}
	cerr := rp.CommitReplay(r.Context(), plan)
	outcome := "done"
	if cerr != nil {
		outcome = "failed: " + cerr.Error()
	}
	// The commit happened (or not): record it even if the browser went away.
	actx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 10*time.Second)
	defer cancel()
	id := who(r)
	row, err := s.audit.write(actx, AuditEntry{Actor: id.user, Client: id.client, Session: s.sessions.ref(id.session),
		Action: actionReplay, Source: t.Source, Consumer: t.Consumer, Selection: "to " + plan.To, Outcome: outcome,
		Counts: map[string]int{"covered": int(plan.Covered()), "partitions": len(plan.Partitions)}})
	if err != nil {
		return errors.Join(cerr, err)
	}
	if cerr != nil {
		return fmt.Errorf("replay of %s: %w (audit row %d)", t.Consumer, cerr, row)
	}
	http.Redirect(w, r, "/audit/"+strconv.FormatInt(row, 10), http.StatusSeeOther)
	return nil
}
