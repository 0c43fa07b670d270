package main

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/oncely/oncely/consumer"
)

func runLag(ctx context.Context, a *app, args []string) error {
	fs := a.flags("lag", "oncely lag --broker URL --source S --consumer C [--partitions] [--output text|json]", `
Shows how far a consumer is behind, without joining its consumer group:
for Kafka the lag (end offset minus committed offset) and the depth of the
dead-letter topic; for RabbitMQ, SQS and mem:// the messages waiting in the
queue (ready and unacknowledged) and in its dead-letter queue. One row per
topic or queue — the source first, then its retry tiers by delay — or, with
--partitions, one row per partition. A source that does not exist is an
error; a Kafka consumer group that never committed on the source is said so
(its lag then counts every retained record).`)
	var bf brokerFlags
	bf.register(fs)
	perPartition := fs.Bool("partitions", false, "one row per Kafka partition instead of one per topic")
	output := outputFlag(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := checkOutput("lag", *output); err != nil {
		return err
	}
	br, err := bf.open(ctx, a, "lag")
	if err != nil {
		return err
	}
	defer br.Close()
	lines, err := br.Backlog(ctx, bf.source, bf.consumer)
	if err != nil {
		return sourceErr("lag", err)
	}
	sortBacklog(bf.source, lines)
	never := neverCommitted(bf.source, lines)
	if !*perPartition {
		lines = sumPerSource(lines)
	}
	if *output == "json" {
		doc := lagJSON{Source: bf.source, Consumer: bf.consumer, Broker: br.Kind(), Rows: []backlogJSON{}, NeverCommitted: never}
		for _, l := range lines {
			doc.Rows = append(doc.Rows, newBacklogJSON(l))
			doc.TotalLag = addKnown(doc.TotalLag, l.Lag)
			doc.TotalDeadLetters = addKnown(doc.TotalDeadLetters, l.DeadLetters)
		}
		return writeJSON(a.stdout, doc)
	}
	if never {
		fmt.Fprintf(a.stdout, "consumer group %s has never committed an offset on %s: the lag counts every retained record\n", bf.consumer, bf.source)
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	if *perPartition {
		fmt.Fprintln(tw, "SOURCE\tPARTITION\tLAG\tDEAD LETTERS")
	} else {
		fmt.Fprintln(tw, "SOURCE\tLAG\tDEAD LETTERS")
	}
	var total, dead int64
	for _, l := range lines {
		lag, dl := "-", "-"
		if l.Lag >= 0 {
			lag = strconv.FormatInt(l.Lag, 10)
			total += l.Lag
		}
		if l.DeadLetters >= 0 {
			dl = strconv.FormatInt(l.DeadLetters, 10)
			dead += l.DeadLetters
		}
		if *perPartition {
			part := "-"
			if l.Partition >= 0 {
				part = strconv.Itoa(int(l.Partition))
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", l.Source, part, lag, dl)
		} else {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", l.Source, lag, dl)
		}
	}
	if len(lines) > 1 {
		if *perPartition {
			fmt.Fprintf(tw, "total\t\t%d\t%d\n", total, dead)
		} else {
			fmt.Fprintf(tw, "total\t%d\t%d\n", total, dead)
		}
	}
	return tw.Flush()
}

// neverCommitted reports whether every line of source itself (not its
// tiers) is a partition the consumer group never committed on.
func neverCommitted(source string, lines []consumer.Backlog) bool {
	n := 0
	for _, l := range lines {
		if l.Source == source && l.Partition >= 0 {
			if !l.NeverCommitted {
				return false
			}
			n++
		}
	}
	return n > 0
}

// sortBacklog orders lines by source (see lagRank), then partition.
func sortBacklog(source string, lines []consumer.Backlog) {
	slices.SortStableFunc(lines, func(x, y consumer.Backlog) int {
		return cmp.Or(cmp.Compare(lagRank(source, x.Source), lagRank(source, y.Source)),
			cmp.Compare(x.Source, y.Source), cmp.Compare(x.Partition, y.Partition))
	})
}

// sumPerSource adds up sorted lines per source: lag and dead letters, each
// -1 (unknown) only when no line of the source knows it; NeverCommitted
// when it holds for every partition of the source.
func sumPerSource(lines []consumer.Backlog) []consumer.Backlog {
	var out []consumer.Backlog
	for _, l := range lines {
		if n := len(out); n > 0 && out[n-1].Source == l.Source {
			out[n-1].Lag = addKnown(out[n-1].Lag, l.Lag)
			out[n-1].DeadLetters = addKnown(out[n-1].DeadLetters, l.DeadLetters)
			continue
		}
		l.Partition = -1
		out = append(out, l)
	}
	for i := range out {
		out[i].NeverCommitted = neverCommitted(out[i].Source, lines)
	}
	return out
}

func addKnown(a, b int64) int64 {
	switch {
	case a < 0:
		return b
	case b < 0:
		return a
	}
	return a + b
}

// lagRank orders a backlog's sources: the consumed source, then retry tiers
// by delay (named <source>.<consumer>.retry.<delay>), then the rest (the
// dead-letter destination).
func lagRank(source, name string) time.Duration {
	if name == source {
		return -1
	}
	if i := strings.LastIndex(name, ".retry."); i >= 0 {
		if d, err := time.ParseDuration(name[i+len(".retry."):]); err == nil {
			return d
		}
	}
	return 1<<63 - 1
}
