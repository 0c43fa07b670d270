package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/oncely/oncely/outbox"
)

func runOutboxDead(ctx context.Context, a *app, args []string) error {
	fs := a.flags("outbox dead", "oncely outbox dead --database-url URL [--schema oncely] [--destination D] [--limit 100] [--output text|json]", `
Lists the outbox's dead rows, oldest first, one line each: sequence number,
message ID, destination, key, attempts, age and the broker's reason. A row
is dead when the broker refused it (too large, say) while other rows of its
destination passed, Config.Refused.MaxAttempts times (10 by default); its key
went on without it. Nothing is changed; oncely outbox redrive sends rows
again.`)
	db := databaseFlags(fs)
	dest := fs.String("destination", "", "only rows of this destination")
	limit := fs.Int("limit", 100, "show at most this many rows (0: all)")
	output := outputFlag(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := checkOutput("outbox dead", *output); err != nil {
		return err
	}
	if *limit < 0 {
		return usagef("outbox dead: --limit must be >= 0")
	}
	dl, closePool, err := openDeadLetters(ctx, a, db, "outbox dead")
	if err != nil {
		return err
	}
	defer closePool()
	rows, err := dl.List(ctx, outbox.DeadFilter{Destination: *dest, Limit: *limit})
	if err != nil {
		return fmt.Errorf("outbox dead: %w", err)
	}
	if *output == "json" {
		doc := outboxDeadJSON{Schema: dl.Schema(), Rows: []outboxDeadRowJSON{}}
		for _, r := range rows {
			doc.Rows = append(doc.Rows, outboxDeadRowJSON{Seq: r.Seq, ID: r.Message.ID, Destination: r.Destination, Key: r.Message.Key,
				Attempts: r.Attempts, Reason: r.Reason, CreatedAt: r.CreatedAt.UTC(), DeadAt: r.DeadAt.UTC(), BodyBytes: len(r.Message.Body)})
		}
		return writeJSON(a.stdout, doc)
	}
	fmt.Fprintf(a.stdout, "outbox dead rows of schema %s: %d\n", dl.Schema(), len(rows))
	if len(rows) == 0 {
		return nil
	}
	now := time.Now()
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SEQ\tID\tDESTINATION\tKEY\tATTEMPTS\tAGE\tREASON")
	for _, r := range rows {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%s\t%s\n", r.Seq, r.Message.ID, r.Destination, orDash(r.Message.Key), r.Attempts, age(now, r.DeadAt), oneLine(r.Reason, 80))
	}
	return tw.Flush()
}

func runOutboxRedrive(ctx context.Context, a *app, args []string) error {
	fs := a.flags("outbox redrive", "oncely outbox redrive --database-url URL [--schema oncely] (--destination D | --seq N[,N…] | --all) [--limit N] [--output text|json]", `
Moves outbox dead rows back into the outbox, in one transaction: each becomes
a new row with the same message ID, destination, key, body and headers and
its attempts from 0, and a running relay publishes it. A redriven row comes
after its key's newer rows (it gave up its place in the key's order, as a
broker's dead-letter redrive does); downstream consumers dedupe by ID, so a
copy that was in fact published is absorbed. Select rows by destination, by
sequence number (from oncely outbox dead), or all of them with --all.`)
	db := databaseFlags(fs)
	dest := fs.String("destination", "", "only rows of this destination")
	var seqs seqList
	fs.Var(&seqs, "seq", "only these rows, by sequence number (comma-separated or repeated)")
	all := fs.Bool("all", false, "every dead row (of --destination, when given)")
	limit := fs.Int("limit", 0, "move at most this many rows, the oldest first (0: all selected)")
	output := outputFlag(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := checkOutput("outbox redrive", *output); err != nil {
		return err
	}
	if *dest == "" && len(seqs) == 0 && !*all {
		return usagef("outbox redrive: select rows with --destination, --seq or --all")
	}
	if *limit < 0 {
		return usagef("outbox redrive: --limit must be >= 0")
	}
	dl, closePool, err := openDeadLetters(ctx, a, db, "outbox redrive")
	if err != nil {
		return err
	}
	defer closePool()
	n, err := dl.Redrive(ctx, outbox.DeadFilter{Destination: *dest, Seqs: seqs, Limit: *limit})
	if err != nil {
		return fmt.Errorf("outbox redrive: %w", err)
	}
	if *output == "json" {
		return writeJSON(a.stdout, struct {
			Schema   string `json:"schema"`
			Redriven int    `json:"redriven"`
		}{dl.Schema(), n})
	}
	fmt.Fprintf(a.stdout, "redriven %d outbox dead rows of schema %s back to the outbox\n", n, dl.Schema())
	return nil
}

// openDeadLetters opens the pool of db and the outbox's dead letters on it.
func openDeadLetters(ctx context.Context, a *app, db dbFlags, cmd string) (*outbox.DeadLetters, func(), error) {
	pool, err := db.open(ctx, a, cmd)
	if err != nil {
		return nil, nil, err
	}
	dl, err := outbox.NewDeadLetters(pool, *db.schema)
	if err != nil {
		pool.Close()
		return nil, nil, fmt.Errorf("%s: %w", cmd, err)
	}
	return dl, pool.Close, nil
}

// outboxDeadJSON is the --output json document of outbox dead.
type outboxDeadJSON struct {
	Schema string              `json:"schema"`
	Rows   []outboxDeadRowJSON `json:"rows"`
}

type outboxDeadRowJSON struct {
	Seq         int64     `json:"seq"`
	ID          string    `json:"id"`
	Destination string    `json:"destination"`
	Key         string    `json:"key,omitempty"`
	Attempts    int       `json:"attempts"`
	Reason      string    `json:"reason"`
	CreatedAt   time.Time `json:"created_at"`
	DeadAt      time.Time `json:"dead_at"`
	BodyBytes   int       `json:"body_bytes"`
}

// seqList is a flag of sequence numbers, comma-separated or repeated.
type seqList []int64

func (s *seqList) String() string {
	parts := make([]string, len(*s))
	for i, n := range *s {
		parts[i] = strconv.FormatInt(n, 10)
	}
	return strings.Join(parts, ",")
}

func (s *seqList) Set(v string) error {
	for _, p := range strings.Split(v, ",") {
		n, err := strconv.ParseInt(strings.TrimSpace(p), 10, 64)
		if err != nil || n < 1 {
			return fmt.Errorf("%q is not a sequence number", p)
		}
		*s = append(*s, n)
	}
	return nil
}
