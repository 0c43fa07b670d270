package vet_test

import (
	"context"
	"errors"
	"go/ast"
	"log/slog"
	"sort"
	"testing"
	"time"

	"golang.org/x/tools/go/analysis/analysistest"

	"github.com/oncely/oncely/adapters/memory"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	memstore "github.com/oncely/oncely/store/memory"
	"github.com/oncely/oncely/vet"
)

// chain builds one of testdata/src/agree's chains for real: the handler
// given to New, its Config.Duplicates and its middleware.
type chain func(h consumer.Handler, idem consumer.Middleware) (consumer.Handler, consumer.Duplicates, []consumer.Middleware)

var (
	discard = slog.New(slog.DiscardHandler)
	logging = middleware.Logging(discard)
	upserts = consumer.AllowDuplicates("upserts by payment ID")
	none    consumer.Duplicates
)

// wrapping is a middleware of the test's own around idem, as a team's or
// a platform package's, routing messages whose ID is "bypass" around the
// claim when bypass is set (a feature flag).
func wrapping(idem consumer.Middleware, bypass bool) consumer.Middleware {
	return func(next consumer.Handler) consumer.Handler {
		claimed := idem(next)
		return consumer.HandlerFunc(func(ctx context.Context, m *consumer.Message) error {
			if bypass && m.ID == "bypass" {
				return next.Handle(ctx, m)
			}
			return claimed.Handle(ctx, m)
		})
	}
}

// agreeChains are the chains of testdata/src/agree, by function name.
var agreeChains = map[string]chain{
	"bare": func(h consumer.Handler, _ consumer.Middleware) (consumer.Handler, consumer.Duplicates, []consumer.Middleware) {
		return h, none, nil
	},
	"loggingOnly": func(h consumer.Handler, _ consumer.Middleware) (consumer.Handler, consumer.Duplicates, []consumer.Middleware) {
		return h, none, []consumer.Middleware{logging}
	},
	"nilMiddleware": func(h consumer.Handler, _ consumer.Middleware) (consumer.Handler, consumer.Duplicates, []consumer.Middleware) {
		var optional consumer.Middleware
		return h, none, []consumer.Middleware{logging, optional}
	},
	"givenToNew": func(h consumer.Handler, idem consumer.Middleware) (consumer.Handler, consumer.Duplicates, []consumer.Middleware) {
		return h, none, []consumer.Middleware{logging, idem}
	},
	"preChained": func(h consumer.Handler, idem consumer.Middleware) (consumer.Handler, consumer.Duplicates, []consumer.Middleware) {
		return consumer.Chain(h, logging, idem), none, nil
	},
	"nestedChain": func(h consumer.Handler, idem consumer.Middleware) (consumer.Handler, consumer.Duplicates, []consumer.Middleware) {
		return consumer.Chain(consumer.Chain(h, idem), logging), none, []consumer.Middleware{logging}
	},
	"teamMiddleware": func(h consumer.Handler, idem consumer.Middleware) (consumer.Handler, consumer.Duplicates, []consumer.Middleware) {
		return h, none, []consumer.Middleware{wrapping(idem, false)}
	},
	"platformMiddleware": func(h consumer.Handler, idem consumer.Middleware) (consumer.Handler, consumer.Duplicates, []consumer.Middleware) {
		return h, none, []consumer.Middleware{logging, wrapping(idem, false)}
	},
	"optOut": func(h consumer.Handler, _ consumer.Middleware) (consumer.Handler, consumer.Duplicates, []consumer.Middleware) {
		return h, upserts, nil
	},
	"optOutBesideIdempotency": func(h consumer.Handler, idem consumer.Middleware) (consumer.Handler, consumer.Duplicates, []consumer.Middleware) {
		return h, upserts, []consumer.Middleware{idem}
	},
	"flagBypass": func(h consumer.Handler, idem consumer.Middleware) (consumer.Handler, consumer.Duplicates, []consumer.Middleware) {
		return h, none, []consumer.Middleware{wrapping(idem, true)}
	},
	"platformBesideClaim": func(h consumer.Handler, idem consumer.Middleware) (consumer.Handler, consumer.Duplicates, []consumer.Middleware) {
		return consumer.Chain(h, logging, idem), none, nil
	},
	"platformMetricsOnly": func(h consumer.Handler, _ consumer.Middleware) (consumer.Handler, consumer.Duplicates, []consumer.Middleware) {
		return consumer.Chain(h, logging, logging), none, nil
	},
	"forwardedLogging": func(h consumer.Handler, _ consumer.Middleware) (consumer.Handler, consumer.Duplicates, []consumer.Middleware) {
		return h, none, []consumer.Middleware{logging}
	},
	"forwardedClaim": func(h consumer.Handler, idem consumer.Middleware) (consumer.Handler, consumer.Duplicates, []consumer.Middleware) {
		return h, none, []consumer.Middleware{logging, idem}
	},
	"tupleInHandler": func(h consumer.Handler, _ consumer.Middleware) (consumer.Handler, consumer.Duplicates, []consumer.Middleware) {
		return h, none, nil
	},
	"markWithoutClaim": func(h consumer.Handler, _ consumer.Middleware) (consumer.Handler, consumer.Duplicates, []consumer.Middleware) {
		return h, none, []consumer.Middleware{func(next consumer.Handler) consumer.Handler { return consumer.Deduplicating(next) }}
	},
}

// runtimeOutcome is what consumer.New and the claim witness did with one
// chain over agreeMessages.
type runtimeOutcome struct {
	err          error // New's
	deadLettered int   // with reason no-claim
}

// agreeMessages are published to every chain New accepts; "bypass" is
// routed around the claim by the flagged chain.
var agreeMessages = []string{"m1", "bypass", "m2"}

func runChain(t *testing.T, build chain) runtimeOutcome {
	t.Helper()
	st, err := memstore.New(memstore.Config{})
	if err != nil {
		t.Fatal(err)
	}
	broker := memory.NewBroker()
	ok := consumer.HandlerFunc(func(context.Context, *consumer.Message) error { return nil })
	h, dups, mws := build(ok, middleware.Idempotency(st))
	c, err := consumer.New(broker.NewSource("src", "test"), h, consumer.Config{Name: "test", Logger: discard, Duplicates: dups}, mws...)
	if err != nil {
		return runtimeOutcome{err: err}
	}
	done := make(chan error, 1)
	go func() { done <- c.Run(context.Background()) }()
	for _, id := range agreeMessages {
		if err := broker.Publish(context.Background(), "src", &consumer.Message{ID: id, Body: []byte(id)}); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for broker.Depth("src") > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("timed out: %d messages not settled", broker.Depth("src"))
		}
		time.Sleep(2 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	var out runtimeOutcome
	for _, m := range broker.DeadLetters("src", "test") {
		if m.Headers[consumer.HeaderDeadLetterReason] == consumer.ReasonNoClaim {
			out.deadLettered++
		}
	}
	return out
}

// TestVetAndNewAgree runs NoDedupe over testdata/src/agree and builds the
// same chains for real, and checks that the two agree:
//
//  1. every chain New refuses with ErrNoIdempotency or
//     ErrOptOutWithIdempotency, vet reports;
//  2. every chain vet reports, New refuses, or the witness dead-letters all
//     its messages (reason no-claim);
//  3. no chain New accepts and whose every message passes a claim (or that
//     opts out), vet reports.
//
// A chain that routes some messages around its claim is left to the
// witness: vet does not see it (the docs say so). A handler marked
// Deduplicating by a package that never claims, vet reports and New
// accepts. The test pins that the witness dead-letters exactly the
// unclaimed messages of both.
func TestVetAndNewAgree(t *testing.T) {
	results := analysistest.Run(t, analysistest.TestData(), vet.NoDedupe, "agree")
	reported := map[string]bool{}
	declared := map[string]bool{}
	for _, r := range results {
		for _, f := range r.Pass.Files {
			for _, d := range f.Decls {
				fd, ok := d.(*ast.FuncDecl)
				if !ok {
					continue
				}
				for _, diag := range r.Diagnostics {
					if fd.Pos() <= diag.Pos && diag.Pos < fd.End() {
						reported[fd.Name.Name] = true
					}
				}
				declared[fd.Name.Name] = true
			}
		}
	}
	var names []string
	for name := range agreeChains {
		names = append(names, name)
		if !declared[name] {
			t.Errorf("chain %q has no function in testdata/src/agree", name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			out := runChain(t, agreeChains[name])
			vetSays := reported[name]
			t.Logf("vet reports: %v; New: %v; dead-lettered (no-claim): %d of %d", vetSays, out.err, out.deadLettered, len(agreeMessages))
			provable := errors.Is(out.err, consumer.ErrNoIdempotency) || errors.Is(out.err, consumer.ErrOptOutWithIdempotency)
			switch {
			case provable && !vetSays:
				t.Errorf("New refuses the chain (%v), vet does not report it", out.err)
			case vetSays && out.err == nil && out.deadLettered != len(agreeMessages):
				t.Errorf("vet reports the chain, but New accepts it and the witness dead-letters only %d of %d messages", out.deadLettered, len(agreeMessages))
			}
			switch name {
			case "flagBypass":
				if out.err != nil || out.deadLettered != 1 {
					t.Errorf("flag around the claim: New %v, %d dead-lettered; want accepted and 1 (the bypassed message)", out.err, out.deadLettered)
				}
			case "markWithoutClaim":
				if out.err != nil || out.deadLettered != len(agreeMessages) {
					t.Errorf("Deduplicating without a claim: New %v, %d dead-lettered; want accepted and all %d", out.err, out.deadLettered, len(agreeMessages))
				}
			}
		})
	}
}
