package console

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
)

// Filter selects dead letters. Its zero value selects every one. Pages
// show what it selects; plans, redrives and deletes apply it to the whole
// dead-letter destination (adapters.RedriveOptions.Match), not to the page.
type Filter struct {
	// Reason selects this dead-letter reason; "" any.
	Reason string
	// Text selects dead letters whose message ID, key, error, error type
	// or body contains it, ignoring case (ASCII case for ASCII text,
	// Unicode simple folding otherwise), within the first TextSearchLimit
	// bytes of each; "" any.
	Text string
	// Since and Until select failure times in [Since, Until); zero: open.
	Since, Until time.Time
	// Group selects one fingerprint (Fingerprint.ID); "" any.
	Group string
	// ID selects one message ID; "" any.
	ID string

	text textSearch
}

// timeLayouts are the forms Since and Until are read in (UTC when no zone).
var timeLayouts = []string{time.RFC3339, "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02"}

// ParseFilter reads a Filter from query or form values reason, text,
// since, until, group and id, reporting every bad one.
func ParseFilter(v url.Values) (Filter, error) {
	f := Filter{Reason: strings.TrimSpace(v.Get("reason")), Text: strings.TrimSpace(v.Get("text")),
		Group: strings.TrimSpace(v.Get("group")), ID: v.Get("id")}
	var errs []error
	if f.Reason != "" && !slices.Contains(reasons, f.Reason) {
		errs = append(errs, fmt.Errorf("unknown reason %q; use one of %s", f.Reason, strings.Join(reasons, ", ")))
	}
	for _, p := range []struct {
		name string
		t    *time.Time
	}{{"since", &f.Since}, {"until", &f.Until}} {
		raw := strings.TrimSpace(v.Get(p.name))
		if raw == "" {
			continue
		}
		t, err := parseTime(raw)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %q is not a time (use 2006-01-02T15:04 in UTC, or RFC 3339)", p.name, raw))
		}
		*p.t = t
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && !f.Until.After(f.Since) {
		errs = append(errs, errors.New("until must be after since"))
	}
	if f.Text != "" {
		f.text = newTextSearch(f.Text)
	}
	return f, errors.Join(errs...)
}

func parseTime(raw string) (time.Time, error) {
	var err error
	for _, l := range timeLayouts {
		var t time.Time
		if t, err = time.ParseInLocation(l, raw, time.UTC); err == nil {
			return t, nil
		}
	}
	return time.Time{}, err
}

// Values returns f as query values, ParseFilter's input; empty fields are
// left out.
func (f Filter) Values() url.Values {
	v := url.Values{}
	set := func(k, s string) {
		if s != "" {
			v.Set(k, s)
		}
	}
	set("reason", f.Reason)
	set("text", f.Text)
	if !f.Since.IsZero() {
		v.Set("since", f.Since.UTC().Format(time.RFC3339))
	}
	if !f.Until.IsZero() {
		v.Set("until", f.Until.UTC().Format(time.RFC3339))
	}
	set("group", f.Group)
	set("id", f.ID)
	return v
}

// Query is Values encoded, for links.
func (f Filter) Query() string { return f.Values().Encode() }

// Empty reports whether f selects every dead letter.
func (f Filter) Empty() bool { return len(f.Values()) == 0 }

// String describes f for people and the audit table: its query, or "all".
func (f Filter) String() string {
	if f.Empty() {
		return "all"
	}
	return f.Query()
}

// Match reports whether f selects d.
func (f Filter) Match(d adapters.DeadLetter) bool {
	if f.ID != "" && d.Message.ID != f.ID {
		return false
	}
	if f.Reason != "" && d.Reason() != f.Reason {
		return false
	}
	if !f.Since.IsZero() || !f.Until.IsZero() {
		t := d.FailedAt()
		if (!f.Since.IsZero() && t.Before(f.Since)) || (!f.Until.IsZero() && !t.Before(f.Until)) {
			return false
		}
	}
	if f.text.set() {
		m := d.Message
		if !f.text.inString(m.ID) && !f.text.inString(m.Key) && !f.text.inString(d.Error()) &&
			!f.text.inString(m.Header(consumer.HeaderErrorType)) && !f.text.inBytes(m.Body) {
			return false
		}
	}
	return f.Group == "" || FingerprintOf(d).ID() == f.Group
}

// Select returns the dead letters of dls that f selects.
func (f Filter) Select(dls []adapters.DeadLetter) []adapters.DeadLetter {
	sel, _ := f.selectUntil(dls, func() bool { return false })
	return sel
}

// selectUntil returns the dead letters of dls that f selects among the
// first scanned, those it matched before expired reported true: it asks
// before each dead letter. An empty f selects dls without asking.
func (f Filter) selectUntil(dls []adapters.DeadLetter, expired func() bool) (sel []adapters.DeadLetter, scanned int) {
	if f.Empty() {
		return dls, len(dls)
	}
	for _, d := range dls {
		if expired() {
			break
		}
		scanned++
		if f.Match(d) {
			sel = append(sel, d)
		}
	}
	return sel, scanned
}
