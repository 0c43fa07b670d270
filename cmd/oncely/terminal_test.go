package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/adapters/memory"
	"github.com/oncely/oncely/consumer"
)

// hostile are texts a producer can put in a message's ID, key, headers,
// body and (through a handler that quotes it) its error.
var hostile = []struct{ name, text string }{
	{"OSC title", "a\x1b]0;pwned\x07b"},
	{"clear screen", "a\x1b[2Jb\x1b[H"},
	{"8-bit CSI rune", "a\u009b2Jb"},
	{"8-bit CSI byte", "a\x9b2Jb"},
	{"OSC 8 hyperlink", "\x1b]8;;https://evil.example/\x1b\\click\x1b]8;;\x1b\\"},
	{"invalid UTF-8", "a\xff\xfe\xc3b"},
	{"bidi override", "invoice-\u202eexe.pdf"},
	{"carriage return", "ok\rFAKE"},
	{"DEL and BEL", "a\x7fb\x07"},
	{"NUL", "a\x00b"},
}

// checkTerminalSafe fails when out holds a byte or character a terminal
// acts on: a C0 control other than those in allowed, DEL, a C1 control,
// invalid UTF-8 or a bidirectional format character.
func checkTerminalSafe(t *testing.T, what, out, allowed string) {
	t.Helper()
	for i := 0; i < len(out); {
		r, size := utf8.DecodeRuneInString(out[i:])
		bad := (r == utf8.RuneError && size == 1) || ((r < 0x20 || r == 0x7f) && !strings.ContainsRune(allowed, r)) ||
			(r >= 0x80 && r <= 0x9f) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) || r == 0x200e || r == 0x200f
		if bad {
			lo, hi := max(0, i-30), min(len(out), i+30)
			t.Fatalf("%s: raw %q at byte %d: …%q…", what, out[i:i+size], i, out[lo:hi])
		}
		i += size
	}
}

func TestSafeLineEscapesEveryControl(t *testing.T) {
	for _, tc := range hostile {
		t.Run(tc.name, func(t *testing.T) {
			checkTerminalSafe(t, "safeLine", safeLine(tc.text+"\n\t"), "")
			checkTerminalSafe(t, "safeLines", safeLines(tc.text+"\n\t"), "\n\t")
		})
	}
	for in, want := range map[string]string{
		"a\x1b]0;t\x07": `a\x1b]0;t\x07`, "\u009b": `\u009b`, "\x9b": `\x9b`, "x\u202ey": `x\u202ey`, "a\rb": `a\rb`,
		"l1\nl2\tc": `l1\nl2\tc`, "ünïcödé 日本": "ünïcödé 日本", `C:\path`: `C:\path`,
	} {
		require.Equal(t, want, safeLine(in), "%q", in)
	}
	require.Equal(t, "l1\nl2\tc\\r", safeLines("l1\nl2\tc\r"))
}

// TestDLQCommandsNeverWriteControlsToTheTerminal dead-letters messages
// whose ID, key, header names and values, body and error carry terminal
// escape sequences, then runs dlq list, show (text and JSON), redrive
// --plan's sibling outputs and lag. Catches: any message- or broker-supplied
// field printed raw (the terminal retitled, cleared, handed a hyperlink or
// a right-to-left override), and JSON output that changes the values.
func TestDLQCommandsNeverWriteControlsToTheTerminal(t *testing.T) {
	b := memory.NewBroker()
	opts := []adapters.Option{adapters.WithMemoryBroker(b)}
	const source, name = "hostile", "ledger"
	var msgs []*consumer.Message
	for i, h := range hostile {
		msgs = append(msgs, &consumer.Message{ID: fmt.Sprintf("h%d", i), Key: h.text, Body: []byte("body " + h.text + "\nline 2\ttab"),
			Headers: map[string]string{"x-hostile": h.text, "x-name-" + h.text: "v"}})
	}
	// An ID with a control character is dead-lettered as invalid-id.
	evilID := "id\x1b[2J"
	msgs = append(msgs, &consumer.Message{ID: evilID, Body: []byte("x")})
	deadLetterAll(t, opts, source, name, msgs)

	env := map[string]string{"BROKER_URL": "mem://"}
	sel := []string{"--source", source, "--consumer", name}
	run := func(args ...string) string {
		t.Helper()
		code, out, errs := cli(t, env, opts, append(args, sel...)...)
		require.Equal(t, 0, code, "%v: %s", args, errs)
		checkTerminalSafe(t, strings.Join(args, " ")+" stderr", errs, "\n")
		return out
	}
	out := run("dlq", "list", "--limit", "0")
	require.Contains(t, out, fmt.Sprintf(": %d\n", len(msgs)))
	require.Contains(t, out, `id\x1b[2J`)
	checkTerminalSafe(t, "dlq list", out, "\n")

	out = run("dlq", "show", "--limit", "0")
	for _, want := range []string{`a\x1b]0;pwned\x07b`, `a\u009b2Jb`, `a\x9b2Jb`, `invoice-\u202eexe.pdf`, `ok\rFAKE`, `x-name-a\x1b[2Jb\x1b[H: v`} {
		require.Contains(t, out, want)
	}
	checkTerminalSafe(t, "dlq show", out, "\n\t")

	for i, h := range hostile {
		id := fmt.Sprintf("h%d", i)
		// On a terminal --body escapes; --raw (or a pipe) gives the bytes.
		a, outb, errb := newCLI(env, opts)
		a.stdoutTerminal = true
		require.Equal(t, 0, a.run(t.Context(), append([]string{"dlq", "show", "--id", id, "--body"}, sel...)), errb.String())
		checkTerminalSafe(t, "dlq show --body on a terminal", outb.String(), "\n\t")
		for _, args := range [][]string{{"--body", "--raw"}, {"--body"}} {
			a, outb, errb = newCLI(env, opts)
			a.stdoutTerminal = len(args) == 2
			require.Equal(t, 0, a.run(t.Context(), append(append([]string{"dlq", "show", "--id", id}, args...), sel...)), errb.String())
			require.Equal(t, "body "+h.text+"\nline 2\ttab", outb.String(), "%s %v: the bytes as stored", h.name, args)
		}
	}

	js := run("dlq", "show", "--limit", "0", "--output", "json")
	checkTerminalSafe(t, "dlq show --output json", js, "\n")
	var doc deadLettersJSON
	require.NoError(t, json.Unmarshal([]byte(js), &doc))
	byID := map[string]deadLetterJSON{}
	for _, d := range doc.DeadLetters {
		byID[d.ID] = d
	}
	require.Contains(t, byID, evilID, "JSON keeps the ID as it is")
	for i, h := range hostile {
		d := byID[fmt.Sprintf("h%d", i)]
		if utf8.ValidString(h.text) {
			require.Equal(t, h.text, d.Key, h.name)
			require.Equal(t, h.text, d.Headers["x-hostile"], h.name)
			require.Equal(t, "body "+h.text+"\nline 2\ttab", *d.Body, h.name)
		} else {
			require.Equal(t, []byte("body "+h.text+"\nline 2\ttab"), d.BodyBase64, h.name)
		}
	}

	checkTerminalSafe(t, "lag", run("lag"), "\n")
	code, _, errs := cli(t, env, opts, append([]string{"dlq", "show", "--id", "nope\x1b]0;x\x07"}, sel...)...)
	require.Equal(t, 1, code)
	checkTerminalSafe(t, "an error naming a hostile ID", errs, "\n")
	code, _, errs = cli(t, env, opts, "dlq", "list", "--source", "no\x1b[2Jsuch", "--consumer", name)
	require.Equal(t, 1, code)
	checkTerminalSafe(t, "an error naming a hostile source", errs, "\n")
	require.Contains(t, errs, `no\x1b[2Jsuch`)
}

func newCLI(env map[string]string, opts []adapters.Option) (*app, *strings.Builder, *strings.Builder) {
	var out, errb strings.Builder
	a := newApp(&out, &errb, func(k string) string { return env[k] })
	a.openOpts = opts
	a.memoryShared = true
	return a, &out, &errb
}

// deadLetterAll publishes msgs and runs a consumer that fails each one
// permanently with an error quoting its key, until all are dead-lettered.
func deadLetterAll(t *testing.T, opts []adapters.Option, source, name string, msgs []*consumer.Message) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	br, err := adapters.Open(ctx, "mem://", opts...)
	require.NoError(t, err)
	defer br.Close()
	require.NoError(t, br.Publish(ctx, source, msgs...))
	src, err := br.Source(ctx, source, name)
	require.NoError(t, err)
	var mu sync.Mutex
	n := 0
	done := make(chan struct{})
	obs := observer(func(ev consumer.Event) {
		mu.Lock()
		defer mu.Unlock()
		if ev.Outcome == consumer.OutcomeDeadLettered {
			if n++; n == len(msgs) {
				close(done)
			}
		}
	})
	h := consumer.HandlerFunc(func(_ context.Context, m *consumer.Message) error {
		return consumer.Permanent(fmt.Errorf("cannot use key %s", m.Key))
	})
	c, err := consumer.New(src, h, consumer.Config{Duplicates: consumer.AllowDuplicates("test: dead-letters everything"), Name: name, Observer: obs})
	require.NoError(t, err)
	go func() { _ = c.Run(ctx) }()
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("not every message was dead-lettered")
	}
	require.NoError(t, c.Stop(ctx))
}
