package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/adapters/memory"
)

// TestDLQPurge: dlq purge deletes nothing unless confirmed on the terminal
// (or told --yes), deletes only what its filters select, and a dry run
// deletes nothing. Catches a purge that deletes before or without the
// answer, or more than was confirmed.
func TestDLQPurge(t *testing.T) {
	opts := []adapters.Option{adapters.WithMemoryBroker(memory.NewBroker())}
	seed(t, "mem://", opts, "payments", "ledger") // dead letters: p2 permanent, p4 exhausted
	sel := []string{"--broker", "mem://", "--source", "payments", "--consumer", "ledger"}
	run := func(answer string, args ...string) (int, string, string) {
		t.Helper()
		var out, errb bytes.Buffer
		a := newApp(&out, &errb, func(string) string { return "" })
		a.openOpts, a.stdin, a.stdinTerminal = opts, strings.NewReader(answer), answer != ""
		a.memoryShared = true
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		code := a.run(ctx, append(args, sel...))
		return code, out.String(), errb.String()
	}
	count := func() string {
		t.Helper()
		code, out, errs := run("", "dlq", "list")
		require.Equal(t, 0, code, errs)
		return out
	}

	code, out, errs := run("n\n", "dlq", "purge")
	require.Equal(t, 0, code, errs)
	require.Contains(t, errs, "Delete 2 of the 2 dead letters of source payments, consumer ledger (2 copies)? This cannot be undone. [y/N]")
	require.Contains(t, out, "not confirmed; nothing deleted")
	require.Contains(t, count(), ": 2\n")

	code, out, errs = run("", "dlq", "purge", "--dry-run", "--reason", "permanent")
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "dry run: would purge 1 of 2 dead letters of source payments, consumer ledger; 1 left in place")
	require.Contains(t, count(), ": 2\n")

	code, out, errs = run("y\n", "dlq", "purge", "--reason", "permanent")
	require.Equal(t, 0, code, errs)
	require.Contains(t, errs, "Delete 1 of the 2")
	require.Contains(t, out, "purged 1 of 2 dead letters of source payments, consumer ledger; 1 left in place")
	list := count()
	require.Contains(t, list, ": 1\n")
	require.Contains(t, list, "p4")
	require.NotContains(t, list, "p2")

	code, out, errs = run("", "dlq", "purge", "--yes")
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "purged 1 of 1")
	require.Contains(t, count(), ": 0\n")
}
