package envtest

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
)

// LogCheck is a slog.Handler for tests that sees every record, at every
// level, and notes each attribute whose value is a time.Duration: a JSON
// handler prints those as bare nanoseconds, so oncely logs durations as text
// (d.String()). It passes records on to next when next is enabled for them.
// Use one per test binary (a package's test logger) and call Err from
// TestMain after the tests ran.
type LogCheck struct {
	next  slog.Handler
	found *durations
}

type durations struct {
	mu    sync.Mutex
	where map[string]bool // "message: key"
}

// NewLogCheck returns a LogCheck that passes records on to next.
func NewLogCheck(next slog.Handler) *LogCheck {
	return &LogCheck{next: next, found: &durations{where: map[string]bool{}}}
}

// Enabled reports true: every level is checked.
func (h *LogCheck) Enabled(context.Context, slog.Level) bool { return true }

// Handle notes r's duration attributes and passes r on.
func (h *LogCheck) Handle(ctx context.Context, r slog.Record) error {
	r.Attrs(func(a slog.Attr) bool {
		h.found.note(r.Message, a)
		return true
	})
	if h.next.Enabled(ctx, r.Level) {
		return h.next.Handle(ctx, r)
	}
	return nil
}

// WithAttrs notes attrs' durations and returns a LogCheck over
// next.WithAttrs(attrs).
func (h *LogCheck) WithAttrs(attrs []slog.Attr) slog.Handler {
	for _, a := range attrs {
		h.found.note("(logger attribute)", a)
	}
	return &LogCheck{next: h.next.WithAttrs(attrs), found: h.found}
}

// WithGroup returns a LogCheck over next.WithGroup(name).
func (h *LogCheck) WithGroup(name string) slog.Handler {
	return &LogCheck{next: h.next.WithGroup(name), found: h.found}
}

// Err lists the log lines that carried a time.Duration attribute, or nil.
func (h *LogCheck) Err() error {
	h.found.mu.Lock()
	defer h.found.mu.Unlock()
	if len(h.found.where) == 0 {
		return nil
	}
	where := make([]string, 0, len(h.found.where))
	for w := range h.found.where {
		where = append(where, w)
	}
	slices.Sort(where)
	return fmt.Errorf("log attributes that are a time.Duration (JSON prints them as nanoseconds; log d.String()):\n  %s", strings.Join(where, "\n  "))
}

func (d *durations) note(msg string, a slog.Attr) {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindDuration:
		d.mu.Lock()
		d.where[msg+": "+a.Key] = true
		d.mu.Unlock()
	case slog.KindGroup:
		for _, g := range v.Group() {
			d.note(msg, g)
		}
	}
}
