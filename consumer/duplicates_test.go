package consumer_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/oncely/oncely/adapters/memory"
	"github.com/oncely/oncely/consumer"
)

// dedupMiddleware stands for middleware.Idempotency: it marks its handler.
func dedupMiddleware(next consumer.Handler) consumer.Handler { return consumer.Deduplicating(next) }

func passThrough(next consumer.Handler) consumer.Handler {
	return consumer.HandlerFunc(func(ctx context.Context, m *consumer.Message) error { return next.Handle(ctx, m) })
}

func TestNewRefusesChainWithoutIdempotency(t *testing.T) {
	src := memory.NewBroker().NewSource("src", "test")
	h := consumer.HandlerFunc(func(context.Context, *consumer.Message) error { return nil })
	quiet := slog.New(slog.DiscardHandler)
	for _, tc := range []struct {
		name    string
		dups    consumer.Duplicates
		mws     []consumer.Middleware
		h       consumer.Handler
		wantErr string // "" means accepted
	}{
		{"no middleware", consumer.Duplicates{}, nil, h, "no idempotency middleware"},
		{"other middleware only: the witness decides", consumer.Duplicates{}, []consumer.Middleware{passThrough}, h, ""},
		{"idempotency innermost", consumer.Duplicates{}, []consumer.Middleware{passThrough, dedupMiddleware}, h, ""},
		{"idempotency outermost", consumer.Duplicates{}, []consumer.Middleware{dedupMiddleware, passThrough}, h, ""},
		{"idempotency between", consumer.Duplicates{}, []consumer.Middleware{passThrough, dedupMiddleware, passThrough}, h, ""},
		{"handler already deduplicating", consumer.Duplicates{}, nil, consumer.Deduplicating(h), ""},
		{"explicit opt-out", consumer.AllowDuplicates("upserts by payment ID"), []consumer.Middleware{passThrough}, h, ""},
		{"opt-out without a reason", consumer.AllowDuplicates(""), nil, h, "needs a reason"},
		{"opt-out with a blank reason", consumer.AllowDuplicates("  \t"), nil, h, "needs a reason"},
		{"opt-out and idempotency", consumer.AllowDuplicates("why"), []consumer.Middleware{dedupMiddleware}, h, "drop one of the two"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := consumer.New(src, tc.h, consumer.Config{Name: "test", Logger: quiet, Duplicates: tc.dups}, tc.mws...)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if got := c.Duplicates(); got != tc.dups {
					t.Fatalf("Duplicates() = %+v, want %+v", got, tc.dups)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("New = %v, want an error containing %q", err, tc.wantErr)
			}
			if tc.wantErr == "no idempotency middleware" && !errors.Is(err, consumer.ErrNoIdempotency) {
				t.Fatalf("error %v does not wrap ErrNoIdempotency", err)
			}
		})
	}
}

func TestAllowDuplicatesIsLogged(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	src := memory.NewBroker().NewSource("src", "ledger")
	h := consumer.HandlerFunc(func(context.Context, *consumer.Message) error { return nil })
	_, err := consumer.New(src, h, consumer.Config{Name: "ledger", Logger: log, Duplicates: consumer.AllowDuplicates("upserts by payment ID")})
	if err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"level=INFO", "duplicates allowed", `duplicates_reason="upserts by payment ID"`, "consumer=ledger"} {
		if !strings.Contains(out, want) {
			t.Errorf("log %q lacks %q", out, want)
		}
	}
}

func TestDuplicatesZeroValue(t *testing.T) {
	var d consumer.Duplicates
	if d.Allowed() || d.Reason() != "" {
		t.Fatalf("zero Duplicates = %v %q, want not allowed, no reason", d.Allowed(), d.Reason())
	}
	d = consumer.AllowDuplicates("r")
	if !d.Allowed() || d.Reason() != "r" {
		t.Fatalf("AllowDuplicates(r) = %v %q", d.Allowed(), d.Reason())
	}
}
