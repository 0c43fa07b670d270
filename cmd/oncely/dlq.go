package main

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/oncely/oncely/adapters"
)

func runDLQList(ctx context.Context, a *app, args []string) error {
	fs := a.flags("dlq list", "oncely dlq list --broker URL --source S --consumer C [--limit 100] [--output text|json]", `
Lists the dead letters of a source and consumer, oldest first, one line each:
message ID, reason, attempts, age, copies and error. Nothing is removed.
Copies with the same message ID are shown once. A source that does not exist
on the broker is an error, and so is a consumer name that never read it (the
error lists the consumer names that exist, except on RabbitMQ).`)
	var bf brokerFlags
	bf.register(fs)
	limit := fs.Int("limit", 100, "show at most this many messages (0: all)")
	output := outputFlag(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := checkOutput("dlq list", *output); err != nil {
		return err
	}
	br, err := bf.open(ctx, a, "dlq list")
	if err != nil {
		return err
	}
	defer br.Close()
	dls, err := br.DeadLetters(ctx, bf.source, bf.consumer, *limit)
	if err != nil {
		return sourceErr("dlq list", err)
	}
	if *output == "json" {
		return writeJSON(a.stdout, deadLettersDoc(br, bf, dls, false))
	}
	fmt.Fprintf(a.stdout, "dead letters of source %s, consumer %s (%s): %d\n", safeLine(bf.source), safeLine(bf.consumer), br.Kind(), len(dls))
	if len(dls) == 0 {
		return nil
	}
	now := time.Now()
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tREASON\tATTEMPTS\tAGE\tCOPIES\tERROR")
	for _, d := range dls {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%d\t%s\n", safeLine(d.Message.ID), safeLine(orDash(d.Reason())), d.Attempts(), age(now, d.FailedAt()), d.Copies, oneLine(d.Error(), 80))
	}
	return tw.Flush()
}

func runDLQShow(ctx context.Context, a *app, args []string) error {
	fs := a.flags("dlq show", "oncely dlq show --broker URL --source S --consumer C [--id ID [--body [--raw]]] [--limit 10] [--output text|json]", `
Shows dead letters in full: source, consumer, reason, attempts, age, error,
key, every header and the body. With --id only that message. Nothing is
removed. A source that does not exist on the broker, or a consumer name that
never read it, is an error.

Text output never hands a terminal a control character from a message:
escape sequences, carriage returns, C1 controls, bidirectional overrides and
bytes that are not UTF-8 are shown escaped (\x1b, \r, \u009b, \u202e, \xff),
and a body that is not UTF-8 as base64. JSON output holds the values as
they are (with those characters as \u escapes; a non-UTF-8 body in
body_base64). --body writes only the body of the message --id names: its
bytes as stored when standard output is not a terminal (a file, a pipe),
escaped like the text output on a terminal unless --raw says otherwise.`)
	var bf brokerFlags
	bf.register(fs)
	id := fs.String("id", "", "show only the message with this ID")
	limit := fs.Int("limit", 10, "show at most this many messages (0: all); ignored with --id")
	bodyOnly := fs.Bool("body", false, "write only the body of the message --id names (bytes as stored unless standard output is a terminal)")
	raw := fs.Bool("raw", false, "with --body: write the body's bytes as stored even to a terminal, control characters included")
	output := outputFlag(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := checkOutput("dlq show", *output); err != nil {
		return err
	}
	if *id == "" && flagSet(fs, "id") {
		return usagef("dlq show: --id is empty; give a message ID, or leave --id out to show every dead letter")
	}
	if *bodyOnly && (*id == "" || *output != "text") {
		return usagef("dlq show: --body writes one message's body: it needs --id and text output")
	}
	if *raw && !*bodyOnly {
		return usagef("dlq show: --raw applies to --body only; text output is always escaped and JSON is exact")
	}
	br, err := bf.open(ctx, a, "dlq show")
	if err != nil {
		return err
	}
	defer br.Close()
	n := *limit
	if *id != "" {
		n = 0
	}
	dls, err := br.DeadLetters(ctx, bf.source, bf.consumer, n)
	if err != nil {
		return sourceErr("dlq show", err)
	}
	if *id != "" {
		dls = slices.DeleteFunc(dls, func(d adapters.DeadLetter) bool { return d.Message.ID != *id })
		if len(dls) == 0 {
			return fmt.Errorf("dlq show: no dead letter with ID %q for source %s, consumer %s (run oncely dlq list to see the IDs)", *id, safeLine(bf.source), safeLine(bf.consumer))
		}
	}
	if *bodyOnly {
		return writeBody(a.stdout, dls[0].Message.Body, *raw || !a.stdoutTerminal)
	}
	if *output == "json" {
		return writeJSON(a.stdout, deadLettersDoc(br, bf, dls, true))
	}
	if len(dls) == 0 {
		fmt.Fprintf(a.stdout, "no dead letters for source %s, consumer %s\n", safeLine(bf.source), safeLine(bf.consumer))
		return nil
	}
	now := time.Now()
	for i, d := range dls {
		if i > 0 {
			fmt.Fprintln(a.stdout)
		}
		showDeadLetter(a.stdout, now, d)
	}
	return nil
}

// showDeadLetter prints d in full. Every field that came from the message
// or the broker is made safe for a terminal (safeLine, safeLines); a body
// that is not UTF-8 is shown as base64, said so.
func showDeadLetter(w io.Writer, now time.Time, d adapters.DeadLetter) {
	m := d.Message
	fmt.Fprintf(w, "message %s\n", safeLine(m.ID))
	tw := tabwriter.NewWriter(w, 0, 4, 1, ' ', 0)
	fmt.Fprintf(tw, "  source:\t%s\n", safeLine(d.Source()))
	fmt.Fprintf(tw, "  consumer:\t%s\n", safeLine(orDash(d.Consumer())))
	fmt.Fprintf(tw, "  reason:\t%s\n", safeLine(orDash(d.Reason())))
	fmt.Fprintf(tw, "  attempts:\t%d\n", d.Attempts())
	if t := d.FailedAt(); !t.IsZero() {
		fmt.Fprintf(tw, "  failed at:\t%s (%s ago)\n", t.UTC().Format(time.RFC3339), age(now, t))
	}
	fmt.Fprintf(tw, "  copies:\t%d\n", d.Copies)
	fmt.Fprintf(tw, "  error:\t%s\n", safeLine(orDash(d.Error())))
	fmt.Fprintf(tw, "  key:\t%s\n", safeLine(orDash(m.Key)))
	_ = tw.Flush()
	fmt.Fprintln(w, "  headers:")
	keys := make([]string, 0, len(m.Headers))
	for k := range m.Headers {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(w, "    %s: %s\n", safeLine(k), indent(safeLines(strings.TrimRight(m.Headers[k], "\n")), "      "))
	}
	if !utf8.Valid(m.Body) {
		fmt.Fprintf(w, "  body (%d bytes, not UTF-8 text: base64; dlq show --body writes the bytes):\n    %s\n", len(m.Body), oneLine(base64.StdEncoding.EncodeToString(m.Body), 2000))
		return
	}
	fmt.Fprintf(w, "  body (%d bytes):\n    %s\n", len(m.Body), oneLine(string(m.Body), 2000))
}

// indent puts prefix before every line of s but the first.
func indent(s, prefix string) string {
	return strings.ReplaceAll(s, "\n", "\n"+prefix)
}

// writeBody writes the body of the one dead letter dlq show --body selected:
// the bytes as stored when raw, else made safe for a terminal (safeLines).
func writeBody(w io.Writer, body []byte, raw bool) error {
	if raw {
		_, err := w.Write(body)
		return err
	}
	s := safeLines(string(body))
	if !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	_, err := io.WriteString(w, s)
	return err
}

func runDLQRedrive(ctx context.Context, a *app, args []string) error {
	fs := a.flags("dlq redrive", "oncely dlq redrive --broker URL --source S --consumer C [--reason R] [--error TEXT] [--id ID] [--rate N] [--limit N] [--dry-run | --plan --database-url URL] [--output text|json]", `
Moves dead letters back to their source: each selected message is published
to the source with the same message ID, key and body and without the failure
headers (so its attempt count starts again at 1), confirmed by the broker, and
only then removed from the dead-letter destination. Redriving twice is safe:
the consumer's idempotency claim absorbs the second copy.

Filters select by dead-letter reason (exhausted, permanent, missing-id,
invalid-id, panic, retry-refused, no-claim), by text in the recorded error and by
message ID. --dry-run counts what would move and changes nothing. --plan
also changes nothing: it lists what would move and, from the idempotency
claims in the Postgres store (--database-url), which of those were in fact
applied (the redrive is a no-op for them) and which not. Long runs print
progress on stderr. A source that does not exist on the broker, or a
consumer name that never read it, is an error.`)
	var bf brokerFlags
	bf.register(fs)
	var opts adapters.RedriveOptions
	fs.StringVar(&opts.Reason, "reason", "", "only dead letters with this reason (exhausted, permanent, missing-id, invalid-id, panic, retry-refused, no-claim)")
	fs.StringVar(&opts.ErrorContains, "error", "", "only dead letters whose error contains this text")
	fs.StringVar(&opts.ID, "id", "", "only the dead letter with this message ID")
	fs.Float64Var(&opts.Rate, "rate", 0, "at most this many messages per second (0: no limit)")
	fs.IntVar(&opts.Limit, "limit", 0, "stop after this many messages (0: all)")
	fs.BoolVar(&opts.DryRun, "dry-run", false, "count what would be redriven; change nothing")
	quiet := fs.Bool("quiet", false, "no progress on stderr")
	plan := fs.Bool("plan", false, "show what would be redriven and which of it was already applied (needs --database-url); change nothing")
	db := databaseFlags(fs)
	output := outputFlag(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := checkOutput("dlq redrive", *output); err != nil {
		return err
	}
	if *plan && opts.DryRun {
		return usagef("dlq redrive: --plan and --dry-run both change nothing; give one")
	}
	if opts.Rate < 0 {
		return usagef("dlq redrive: --rate must be >= 0")
	}
	if err := checkFilters("dlq redrive", opts.Reason, opts.Limit, opts.ID, flagSet(fs, "id")); err != nil {
		return err
	}
	br, err := bf.open(ctx, a, "dlq redrive")
	if err != nil {
		return err
	}
	defer br.Close()
	if *plan {
		return planRedrive(ctx, a, br, bf, opts, db, *output)
	}
	var p *progress
	if !*quiet {
		p = newProgress(a.stderr, opts)
		opts.Progress = p.update
	}
	res, err := br.Redrive(ctx, bf.source, bf.consumer, opts)
	if p != nil {
		p.finish()
	}
	if errors.Is(err, adapters.ErrNoSource) || errors.Is(err, adapters.ErrNoConsumer) {
		return sourceErr("dlq redrive", err)
	}
	if *output == "json" {
		if jerr := writeJSON(a.stdout, redriveJSON{Source: bf.source, Consumer: bf.consumer, DryRun: opts.DryRun, Seen: res.Seen,
			Redriven: res.Redriven, Skipped: res.Skipped, DuplicateCopies: res.DuplicateCopies}); jerr != nil {
			return jerr
		}
		if err != nil {
			return fmt.Errorf("dlq redrive stopped: %w\n(what was redriven stays redriven; run the command again to continue)", err)
		}
		return nil
	}
	verb := "redriven"
	if opts.DryRun {
		verb = "dry run: would redrive"
	}
	fmt.Fprintf(a.stdout, "%s %d of %d dead letters of source %s, consumer %s back to %s", verb, res.Redriven, res.Seen, safeLine(bf.source), safeLine(bf.consumer), safeLine(bf.source))
	if res.Skipped > 0 {
		fmt.Fprintf(a.stdout, "; %d left in place by the filters", res.Skipped)
	}
	if res.DuplicateCopies > 0 {
		fmt.Fprintf(a.stdout, "; %d extra copies of redriven IDs removed", res.DuplicateCopies)
	}
	fmt.Fprintln(a.stdout)
	if err != nil {
		return fmt.Errorf("dlq redrive stopped: %w\n(what was redriven stays redriven; run the command again to continue)", err)
	}
	return nil
}

// deadLettersDoc is the --output json document of dlq list (full: dlq show).
func deadLettersDoc(br adapters.Broker, bf brokerFlags, dls []adapters.DeadLetter, full bool) deadLettersJSON {
	doc := deadLettersJSON{Source: bf.source, Consumer: bf.consumer, Broker: br.Kind(), DeadLetters: []deadLetterJSON{}}
	for _, d := range dls {
		doc.DeadLetters = append(doc.DeadLetters, newDeadLetterJSON(d, full))
	}
	return doc
}

// sourceErr wraps a broker command's error, saying what to check when the
// source or the consumer does not exist.
func sourceErr(cmd string, err error) error {
	switch {
	case errors.Is(err, adapters.ErrNoSource):
		return fmt.Errorf("%s: %w\n(check --source: nothing was created)", cmd, err)
	case errors.Is(err, adapters.ErrNoConsumer):
		return fmt.Errorf("%s: %w\n(check --consumer: nothing was created)", cmd, err)
	}
	return fmt.Errorf("%s: %w", cmd, err)
}

func age(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t)
	switch {
	case d < 0:
		return "0s"
	case d < time.Minute:
		return d.Truncate(time.Second).String()
	case d < 48*time.Hour:
		return d.Truncate(time.Minute).String()
	default:
		return fmt.Sprintf("%dd", int(d.Hours()/24))
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// oneLine flattens s to one line of at most n runes (before escaping),
// safe for a terminal (safeLine).
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	runes := 0
	for i := range s { // bytes that are not UTF-8 count one each and stay for safeLine to show
		if runes == n-1 && utf8.RuneCountInString(s[i:]) > 1 {
			s = s[:i] + "…"
			break
		}
		runes++
	}
	return safeLine(s)
}
