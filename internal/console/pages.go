package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/backlog"
	"github.com/oncely/oncely/internal/redriveplan"
)

// Page sizes.
const (
	maxMessagesShown = 500
	maxPlanIDsShown  = 100
	auditShown       = 200
)

// target is the source and consumer of a /c/{source}/{consumer}/ request.
type target struct {
	Source, Consumer string
}

// URL is the target's groups page.
func (t target) URL() string { return consumerURL(t.Source, t.Consumer) }

func targetOf(r *http.Request) target {
	return target{Source: r.PathValue("source"), Consumer: r.PathValue("consumer")}
}

// letters reads up to Config.ScanLimit dead letters of t; truncated when
// the limit was reached.
func (s *Server) letters(ctx context.Context, t target) (dls []adapters.DeadLetter, truncated bool, err error) {
	dls, err = s.cfg.Broker.DeadLetters(ctx, t.Source, t.Consumer, s.cfg.ScanLimit)
	if errors.Is(err, adapters.ErrNoSource) {
		return nil, false, httpErrorf(http.StatusNotFound, "source %q does not exist on the broker (%s)", t.Source, s.cfg.Broker.Kind())
	}
	if errors.Is(err, adapters.ErrNoConsumer) {
		return nil, false, noConsumer(err, s.cfg.Broker.Kind())
	}
	if err != nil {
		return nil, false, err
	}
	return dls, s.cfg.ScanLimit > 0 && len(dls) >= s.cfg.ScanLimit, nil
}

// noConsumer is the 404 of a consumer name that never read its source
// (adapters.ErrNoConsumer): the message names the consumers that exist, or
// says the broker cannot list them.
func noConsumer(err error, kind string) error {
	return httpErrorf(http.StatusNotFound, "%v (%s)", err, kind)
}

func filterOf(r *http.Request) (Filter, error) {
	if err := r.ParseForm(); err != nil {
		return Filter{}, httpErrorf(http.StatusBadRequest, "%v", err)
	}
	f, err := ParseFilter(r.Form)
	if err != nil {
		return f, httpErrorf(http.StatusBadRequest, "filter: %v", err)
	}
	return f, nil
}

type overviewRow struct {
	target
	Backlog backlog.Report
	Err     string
}

func (s *Server) overview(w http.ResponseWriter, r *http.Request) error {
	if src, name := r.URL.Query().Get("source"), r.URL.Query().Get("consumer"); src != "" && name != "" {
		http.Redirect(w, r, consumerURL(src, name), http.StatusSeeOther)
		return nil
	}
	rows := make([]overviewRow, len(s.cfg.Consumers))
	var depth int64
	for i, c := range s.cfg.Consumers {
		rows[i].target = target{Source: c.Source, Consumer: c.Name}
		rep, err := backlog.Read(r.Context(), s.cfg.Broker, c.Source, c.Name, false)
		if err != nil {
			rows[i].Err = err.Error()
			continue
		}
		rows[i].Backlog = rep
		depth += max(rep.TotalDeadLetters, 0)
	}
	s.render(w, r, http.StatusOK, "overview", "Consumers", struct {
		Broker string
		Rows   []overviewRow
		// Depth is the dead letters of the listed consumers whose depth
		// the broker reported.
		Depth int64
	}{s.cfg.Broker.Kind(), rows, depth})
	return nil
}

// filterView is the filter form's state on a consumer's pages.
type filterView struct {
	target
	Filter  Filter
	Reasons []string
}

// SinceInput and UntilInput are the times in a datetime-local input's form.
func (f filterView) SinceInput() string { return inputTime(f.Filter.Since) }
func (f filterView) UntilInput() string { return inputTime(f.Filter.Until) }

func inputTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02T15:04:05")
}

// Link is a path under the consumer with the filter as query, plus extra
// values as key, value pairs.
func (f filterView) Link(path string, kv ...string) string {
	v := f.Filter.Values()
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" {
			v.Del(kv[i])
		} else {
			v.Set(kv[i], kv[i+1])
		}
	}
	u := f.URL() + path
	if q := v.Encode(); q != "" {
		u += "?" + q
	}
	return u
}

// scanView is how much of the dead letters a page's filter went through.
type scanView struct {
	// Scanned is how many dead letters the filter went through; Read
	// how many the page read (at most ScanLimit).
	Scanned, Read int
	// Truncated: the page read ScanLimit dead letters and stopped there.
	Truncated bool
	// Partial: the filter ran out of FilterBudget after Scanned.
	Partial bool
	Budget  time.Duration
}

// selection reads the request's target and filter, the target's dead
// letters (at most ScanLimit) and those of them the filter selects within
// FilterBudget.
func (s *Server) selection(r *http.Request) (t target, f Filter, sel []adapters.DeadLetter, scan scanView, err error) {
	t = targetOf(r)
	if f, err = filterOf(r); err != nil {
		return
	}
	dls, truncated, err := s.letters(r.Context(), t)
	if err != nil {
		return
	}
	deadline := s.cfg.Now().Add(s.cfg.FilterBudget)
	// A browser that went away ends the scan too.
	sel, scanned := f.selectUntil(dls, func() bool { return r.Context().Err() != nil || !s.cfg.Now().Before(deadline) })
	return t, f, sel, scanView{Scanned: scanned, Read: len(dls), Truncated: truncated, Partial: scanned < len(dls), Budget: s.cfg.FilterBudget}, nil
}

func (s *Server) groupsPage(w http.ResponseWriter, r *http.Request) error {
	t, f, sel, scan, err := s.selection(r)
	if err != nil {
		return err
	}
	s.render(w, r, http.StatusOK, "groups", "Dead letters of "+t.Consumer, struct {
		filterView
		scanView
		Groups   []Group
		Selected int
	}{filterView{t, f, reasons}, scan, GroupLetters(sel, s.cfg.Now()), len(sel)})
	return nil
}

func (s *Server) messagesPage(w http.ResponseWriter, r *http.Request) error {
	t, f, sel, scan, err := s.selection(r)
	if err != nil {
		return err
	}
	rows := sel[:min(len(sel), maxMessagesShown)]
	var group *Group
	if f.Group != "" {
		if gs := GroupLetters(sel, s.cfg.Now()); len(gs) == 1 {
			group = &gs[0]
		}
	}
	s.render(w, r, http.StatusOK, "messages", "Dead letters of "+t.Consumer, struct {
		filterView
		scanView
		Group    *Group
		Rows     []adapters.DeadLetter
		Selected int
	}{filterView{t, f, reasons}, scan, group, rows, len(sel)})
	return nil
}

func (s *Server) messagePage(w http.ResponseWriter, r *http.Request) error {
	t := targetOf(r)
	id := r.URL.Query().Get("id")
	dls, truncated, err := s.letters(r.Context(), t)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(dls, func(d adapters.DeadLetter) bool { return d.Message.ID == id })
	if i < 0 {
		where := ""
		if truncated {
			where = fmt.Sprintf(" among the first %d (--scan-limit)", len(dls))
		}
		return httpErrorf(http.StatusNotFound, "no dead letter with ID %q for source %s, consumer %s%s", id, t.Source, t.Consumer, where)
	}
	d := dls[i]
	m := d.Message
	keys := make([]string, 0, len(m.Headers))
	for k := range m.Headers {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	headers := make([]headerView, 0, len(keys))
	for _, k := range keys {
		headers = append(headers, viewHeader(k, m.Headers[k]))
	}
	fp := FingerprintOf(d)
	s.render(w, r, http.StatusOK, "message", "Dead letter "+m.ID, struct {
		filterView
		Letter      adapters.DeadLetter
		Fingerprint Fingerprint
		GroupID     string
		ErrorType   string
		Stack       string
		FirstFailed string
		Headers     []headerView
		Body        bodyView
	}{filterView{t, Filter{ID: m.ID}, reasons}, d, fp, fp.ID(), m.Header(consumer.HeaderErrorType), m.Header(consumer.HeaderStack),
		m.Header(consumer.HeaderFirstFailedAt), headers, viewBody(m.Body)})
	return nil
}

// planView is the plan page's data.
type planView struct {
	filterView
	Plan       redriveplan.Plan
	Applied    []string
	NotApplied []string
	Rate       float64
	MaxRate    float64
	Confirm    string
}

func (s *Server) planPage(w http.ResponseWriter, r *http.Request) error {
	t := targetOf(r)
	f, err := filterOf(r)
	if err != nil {
		return err
	}
	plan, err := redriveplan.Make(r.Context(), s.cfg.Broker, s.claims, t.Source, t.Consumer, adapters.RedriveOptions{Match: f.Match})
	if errors.Is(err, adapters.ErrNoSource) {
		return httpErrorf(http.StatusNotFound, "%v", err)
	}
	if errors.Is(err, adapters.ErrNoConsumer) {
		return noConsumer(err, s.cfg.Broker.Kind())
	}
	if err != nil {
		return err
	}
	s.render(w, r, http.StatusOK, "plan", "Plan for "+t.Consumer, planView{filterView: filterView{t, f, reasons}, Plan: plan,
		Applied: plan.Applied[:min(len(plan.Applied), maxPlanIDsShown)], NotApplied: plan.NotApplied[:min(len(plan.NotApplied), maxPlanIDsShown)],
		Rate: s.cfg.DefaultRate, MaxRate: s.cfg.MaxRate, Confirm: ConfirmWord})
	return nil
}

func (s *Server) auditPage(w http.ResponseWriter, r *http.Request) error {
	rows, err := s.audit.latest(r.Context(), auditShown)
	if err != nil {
		return err
	}
	s.render(w, r, http.StatusOK, "audit", "Audit", rows)
	return nil
}

// auditRowPage lists the message IDs of one audit row, auditIDsPage at a
// time from the one after the query's "after"-th on.
func (s *Server) auditRowPage(w http.ResponseWriter, r *http.Request) error {
	id, err := strconv.ParseInt(r.PathValue("row"), 10, 64)
	if err != nil {
		return httpErrorf(http.StatusNotFound, "no such audit row")
	}
	after := 0
	if v := r.URL.Query().Get("after"); v != "" {
		if after, err = strconv.Atoi(v); err != nil || after < 0 {
			return httpErrorf(http.StatusBadRequest, "after: want a number >= 0")
		}
	}
	e, ok, err := s.audit.entry(r.Context(), id)
	if err != nil {
		return err
	}
	if !ok {
		return httpErrorf(http.StatusNotFound, "no such audit row")
	}
	ids, more, err := s.audit.messageIDs(r.Context(), id, after, auditIDsPage)
	if err != nil {
		return err
	}
	next := 0
	if more {
		next = after + len(ids)
	}
	s.render(w, r, http.StatusOK, "auditrow", fmt.Sprintf("Audit row %d", id), struct {
		Entry AuditEntry
		IDs   []string
		// First is the position of IDs[0] (1 for the first), Next the
		// after of the next page, 0 on the last.
		First, Next int
	}{e, ids, after + 1, next})
	return nil
}
