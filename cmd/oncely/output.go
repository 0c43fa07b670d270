package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
)

// outputFlag registers --output (text or json) on fs.
func outputFlag(fs *flag.FlagSet) *string {
	return fs.String("output", "text", "output format: text or json (one JSON document on stdout)")
}

// checkOutput refuses an --output other than text or json.
func checkOutput(cmd, output string) error {
	if output != "text" && output != "json" {
		return usagef("%s: --output %q: want text or json", cmd, output)
	}
	return nil
}

// writeJSON writes v as one indented JSON document. Strings decode to what
// they hold, but the characters a terminal acts on that encoding/json
// leaves as they are (DEL, the C1 controls, bidirectional format
// characters) are written as \u escapes, so a document printed to a
// terminal cannot drive it either.
func writeJSON(w io.Writer, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := io.WriteString(w, escapeJSONControls(buf.String()))
	return err
}

// escapeJSONControls rewrites, in encoded JSON, DEL and every unsafeRune as
// \u escapes. They occur only inside strings (JSON's syntax is ASCII), where
// the escape decodes to the same character.
func escapeJSONControls(doc string) string {
	if !strings.ContainsFunc(doc, func(r rune) bool { return r == 0x7f || unsafeRune(r) }) {
		return doc
	}
	var b strings.Builder
	for _, r := range doc {
		if r == 0x7f || unsafeRune(r) {
			fmt.Fprintf(&b, `\u%04x`, r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// deadLetterJSON is a dead letter in --output json. Headers and the body are
// set by dlq show only. A body that is valid UTF-8 is in body, any other in
// body_base64.
type deadLetterJSON struct {
	ID         string            `json:"id"`
	Key        string            `json:"key,omitempty"`
	Source     string            `json:"source"`
	Consumer   string            `json:"consumer,omitempty"`
	Reason     string            `json:"reason,omitempty"`
	Attempts   int               `json:"attempts"`
	FailedAt   *time.Time        `json:"failed_at,omitempty"`
	Copies     int               `json:"copies"`
	Error      string            `json:"error,omitempty"`
	Headers    map[string]string `json:"headers,omitempty"`
	Body       *string           `json:"body,omitempty"`
	BodyBase64 []byte            `json:"body_base64,omitempty"`
	BodyBytes  *int              `json:"body_bytes,omitempty"`
}

func newDeadLetterJSON(d adapters.DeadLetter, full bool) deadLetterJSON {
	m := d.Message
	out := deadLetterJSON{ID: m.ID, Key: m.Key, Source: d.Source(), Consumer: d.Consumer(), Reason: d.Reason(),
		Attempts: d.Attempts(), Copies: d.Copies, Error: d.Error()}
	if t := d.FailedAt(); !t.IsZero() {
		t = t.UTC()
		out.FailedAt = &t
	}
	if full {
		out.Headers = m.Headers
		n := len(m.Body)
		out.BodyBytes = &n
		if utf8.Valid(m.Body) {
			b := string(m.Body)
			out.Body = &b
		} else {
			out.BodyBase64 = m.Body
		}
	}
	return out
}

// deadLettersJSON is dlq list's and dlq show's --output json document.
type deadLettersJSON struct {
	Source      string           `json:"source"`
	Consumer    string           `json:"consumer"`
	Broker      string           `json:"broker"`
	DeadLetters []deadLetterJSON `json:"dead_letters"`
}

// redriveJSON is dlq redrive's --output json document.
type redriveJSON struct {
	Source          string `json:"source"`
	Consumer        string `json:"consumer"`
	DryRun          bool   `json:"dry_run"`
	Seen            int    `json:"seen"`
	Redriven        int    `json:"redriven"`
	Skipped         int    `json:"skipped"`
	DuplicateCopies int    `json:"duplicate_copies"`
}

// backlogJSON is one row of lag's --output json; Partition is -1 for a
// whole topic or queue, Lag and DeadLetters -1 when unknown.
type backlogJSON struct {
	Source         string `json:"source"`
	Partition      int32  `json:"partition"`
	Lag            int64  `json:"lag"`
	DeadLetters    int64  `json:"dead_letters"`
	NeverCommitted bool   `json:"never_committed,omitempty"`
}

// lagJSON is lag's --output json document.
type lagJSON struct {
	Source           string        `json:"source"`
	Consumer         string        `json:"consumer"`
	Broker           string        `json:"broker"`
	Rows             []backlogJSON `json:"rows"`
	TotalLag         int64         `json:"total_lag"`
	TotalDeadLetters int64         `json:"total_dead_letters"`
	// NeverCommitted: the consumer group has no committed offset on the
	// source (Kafka); the lag then counts every retained record.
	NeverCommitted bool `json:"never_committed"`
}

func newBacklogJSON(l consumer.Backlog) backlogJSON {
	return backlogJSON{Source: l.Source, Partition: l.Partition, Lag: l.Lag, DeadLetters: l.DeadLetters, NeverCommitted: l.NeverCommitted}
}
