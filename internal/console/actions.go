package console

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/oncely/oncely/adapters"
)

// planLimit reads the form's limit: the number of dead letters the plan
// selected, so an action never takes more than was shown.
func planLimit(r *http.Request) (int, error) {
	n, err := strconv.Atoi(r.PostFormValue("limit"))
	if err != nil || n < 1 {
		return 0, httpErrorf(http.StatusBadRequest, "limit: want the plan's count, a number >= 1 (make a plan first)")
	}
	return n, nil
}

// actionScope reads what a redrive or delete acts on: the target, the filter
// and the plan's count, the most it may take.
func actionScope(r *http.Request) (target, Filter, int, error) {
	t := targetOf(r)
	f, err := filterOf(r)
	if err != nil {
		return t, f, 0, err
	}
	limit, err := planLimit(r)
	return t, f, limit, err
}

func (s *Server) startRedrive(w http.ResponseWriter, r *http.Request) error {
	t, f, limit, err := actionScope(r)
	if err != nil {
		return err
	}
	rate, err := strconv.ParseFloat(strings.TrimSpace(r.PostFormValue("rate")), 64)
	if err != nil || rate <= 0 || rate > s.cfg.MaxRate {
		return httpErrorf(http.StatusBadRequest, "rate: want messages per second, more than 0 and at most %g", s.cfg.MaxRate)
	}
	id := who(r)
	j := &job{Target: t, Filter: f, Actor: id.user, Client: id.client, Session: s.sessions.ref(id.session), Rate: rate, Limit: limit}
	if err := s.startJob(r.Context(), j); err != nil {
		return err
	}
	http.Redirect(w, r, "/jobs/"+j.ID, http.StatusSeeOther)
	return nil
}

func (s *Server) deleteLetters(w http.ResponseWriter, r *http.Request) error {
	t, f, limit, err := actionScope(r)
	if err != nil {
		return err
	}
	if strings.TrimSpace(r.PostFormValue("confirm")) != ConfirmWord {
		return httpErrorf(http.StatusBadRequest, "type %q in the confirmation field to delete; nothing was deleted", ConfirmWord)
	}
	id := who(r)
	var taken idRecorder
	res, perr := s.cfg.Broker.Purge(r.Context(), t.Source, t.Consumer, adapters.PurgeOptions{Match: taken.match(f), Limit: limit})
	outcome := "done"
	if perr != nil {
		outcome = "failed: " + perr.Error()
	}
	// The deletes happened: record them even if the browser went away.
	actx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 10*time.Second)
	defer cancel()
	row := AuditEntry{Actor: id.user, Client: id.client, Session: s.sessions.ref(id.session),
		Action: actionDelete, Source: t.Source, Consumer: t.Consumer,
		Selection: f.String(), Outcome: outcome, Counts: map[string]int{"limit": limit, "seen": res.Seen, "deleted": res.Purged,
			"skipped": res.Skipped, "duplicate_copies": res.DuplicateCopies}}
	taken.record(&row)
	if _, err := s.audit.write(actx, row); err != nil {
		return errors.Join(perr, err)
	}
	if errors.Is(perr, adapters.ErrNoSource) {
		return httpErrorf(http.StatusNotFound, "%v", perr)
	}
	if errors.Is(perr, adapters.ErrNoConsumer) {
		return noConsumer(perr, s.cfg.Broker.Kind())
	}
	status := http.StatusOK
	if perr != nil {
		status = http.StatusInternalServerError
	}
	s.render(w, r, status, "deleted", "Deleted", struct {
		filterView
		Result adapters.PurgeResult
		Error  string
	}{filterView{t, f, reasons}, res, outcome})
	return nil
}

func (s *Server) cancelJob(w http.ResponseWriter, r *http.Request) error {
	j := s.job(r.PathValue("job"))
	if j == nil {
		return httpErrorf(http.StatusNotFound, "no such job")
	}
	// The request's row comes first, so it precedes the job's end row.
	if st := j.State(); st.Status == jobRunning && st.CancelledBy == "" {
		id := who(r)
		if _, err := s.audit.write(r.Context(), AuditEntry{Actor: id.user, Client: id.client, Session: s.sessions.ref(id.session),
			Action: actionCancel, Source: j.Target.Source,
			Consumer: j.Target.Consumer, Selection: j.Filter.String(), Job: j.ID, Outcome: "requested"}); err != nil {
			// Stopping is never refused; the job's end row names who.
			s.log.ErrorContext(r.Context(), "console: the cancel of a redrive is not in the audit table", "job", j.ID, "error", err)
		}
		j.requestCancel(id.user)
	}
	http.Redirect(w, r, "/jobs/"+j.ID, http.StatusSeeOther)
	return nil
}

func (s *Server) jobsPage(w http.ResponseWriter, r *http.Request) error {
	s.render(w, r, http.StatusOK, "jobs", "Jobs", s.jobList())
	return nil
}

func (s *Server) jobPage(w http.ResponseWriter, r *http.Request) error {
	j := s.job(r.PathValue("job"))
	if j == nil {
		return httpErrorf(http.StatusNotFound, "no such job (jobs live in the console's memory: a restart forgets them; see the audit page)")
	}
	s.render(w, r, http.StatusOK, "job", "Redrive "+j.ID, struct {
		Job   *job
		State jobState
	}{j, j.State()})
	return nil
}

// jobProgress is the job's state as JSON, for the progress page's script.
func (s *Server) jobProgress(w http.ResponseWriter, r *http.Request) {
	j := s.job(r.PathValue("job"))
	if j == nil {
		http.Error(w, "no such job", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(j.State())
}
