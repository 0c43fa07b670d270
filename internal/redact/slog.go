package redact

import (
	"context"
	"fmt"
	"log/slog"
)

// Handler returns h scrubbing secrets (Text) from every record's message
// and attribute values (strings, errors and any other value as fmt prints
// it, in groups too), for loggers handed to libraries that may log the URL
// they were given. With no secrets it returns h itself.
func Handler(h slog.Handler, secrets []string) slog.Handler {
	if len(secrets) == 0 {
		return h
	}
	return &handler{h: h, secrets: secrets}
}

type handler struct {
	h       slog.Handler
	secrets []string
}

func (x *handler) Enabled(ctx context.Context, l slog.Level) bool { return x.h.Enabled(ctx, l) }

func (x *handler) Handle(ctx context.Context, r slog.Record) error {
	clean := slog.NewRecord(r.Time, r.Level, Text(r.Message, x.secrets), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		clean.AddAttrs(x.attr(a))
		return true
	})
	return x.h.Handle(ctx, clean)
}

func (x *handler) WithAttrs(as []slog.Attr) slog.Handler {
	clean := make([]slog.Attr, len(as))
	for i, a := range as {
		clean[i] = x.attr(a)
	}
	return &handler{h: x.h.WithAttrs(clean), secrets: x.secrets}
}

func (x *handler) WithGroup(name string) slog.Handler {
	return &handler{h: x.h.WithGroup(name), secrets: x.secrets}
}

func (x *handler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, Text(v.String(), x.secrets))
	case slog.KindGroup:
		g := v.Group()
		clean := make([]any, len(g))
		for i, ga := range g {
			clean[i] = x.attr(ga)
		}
		return slog.Group(a.Key, clean...)
	case slog.KindAny:
		s := fmt.Sprint(v.Any())
		if c := Text(s, x.secrets); c != s {
			return slog.String(a.Key, c)
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}
