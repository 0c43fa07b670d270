package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestVetReportsSeededBugs: oncely vet reports a package with a pool write in
// a transactional handler and a consumer without idempotency (exit code 1,
// one line per report, named by analyzer), and passes the quickstart example.
func TestVetReportsSeededBugs(t *testing.T) {
	if testing.Short() {
		t.Skip("loads packages with go list")
	}
	var out, errb bytes.Buffer
	a := newApp(&out, &errb, func(string) string { return "" })
	code := a.run(context.Background(), []string{"vet", "./testdata/vetbad"})
	if code != 1 {
		t.Fatalf("exit code %d, want 1; stdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
	}
	for _, want := range []string{"vetbad.go:20:", ": txescape: *pgxpool.Pool.Exec runs outside the claim's transaction", "vetbad.go:28:", ": nodedupe: consumer.New without an idempotency middleware"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if n := strings.Count(out.String(), "\n"); n != 2 {
		t.Errorf("%d report lines, want 2 (each report once):\n%s", n, out.String())
	}

	out.Reset()
	errb.Reset()
	if code := a.run(context.Background(), []string{"vet", "../../examples/quickstart"}); code != 0 {
		t.Fatalf("quickstart: exit code %d, want 0; stdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
	}
}
