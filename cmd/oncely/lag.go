package main

import (
	"context"
	"fmt"
	"strconv"
	"text/tabwriter"

	"github.com/oncely/oncely/internal/backlog"
)

func runLag(ctx context.Context, a *app, args []string) error {
	fs := a.flags("lag", "oncely lag --broker URL --source S --consumer C [--partitions] [--output text|json]", `
Shows how far a consumer is behind, without joining its consumer group:
for Kafka the lag (end offset minus committed offset) and the depth of the
dead-letter topic; for RabbitMQ, SQS and mem:// the messages waiting in the
queue (ready and unacknowledged) and in its dead-letter queue. One row per
topic or queue — the source first, then its retry tiers by delay — or, with
--partitions, one row per partition. A source that does not exist is an
error, and so is a consumer name that never read it (the error lists the
names that exist, except on RabbitMQ). A Kafka consumer group that started
(its dead-letter topic exists) but never committed on the source is said so
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
	rep, err := backlog.Read(ctx, br, bf.source, bf.consumer, *perPartition)
	if err != nil {
		return sourceErr("lag", err)
	}
	lines, never := rep.Rows, rep.NeverCommitted
	if *output == "json" {
		doc := lagJSON{Source: bf.source, Consumer: bf.consumer, Broker: br.Kind(), Rows: []backlogJSON{}, NeverCommitted: never,
			TotalLag: rep.TotalLag, TotalDeadLetters: rep.TotalDeadLetters}
		for _, l := range lines {
			doc.Rows = append(doc.Rows, newBacklogJSON(l))
		}
		return writeJSON(a.stdout, doc)
	}
	if never {
		fmt.Fprintf(a.stdout, "consumer group %s has never committed an offset on %s: the lag counts every retained record\n", safeLine(bf.consumer), safeLine(bf.source))
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	if *perPartition {
		fmt.Fprintln(tw, "SOURCE\tPARTITION\tLAG\tDEAD LETTERS")
	} else {
		fmt.Fprintln(tw, "SOURCE\tLAG\tDEAD LETTERS")
	}
	for _, l := range lines {
		lag, dl := "-", "-"
		if l.Lag >= 0 {
			lag = strconv.FormatInt(l.Lag, 10)
		}
		if l.DeadLetters >= 0 {
			dl = strconv.FormatInt(l.DeadLetters, 10)
		}
		if *perPartition {
			part := "-"
			if l.Partition >= 0 {
				part = strconv.Itoa(int(l.Partition))
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", safeLine(l.Source), part, lag, dl)
		} else {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", safeLine(l.Source), lag, dl)
		}
	}
	if len(lines) > 1 {
		if *perPartition {
			fmt.Fprintf(tw, "total\t\t%d\t%d\n", rep.TotalLag, rep.TotalDeadLetters)
		} else {
			fmt.Fprintf(tw, "total\t%d\t%d\n", rep.TotalLag, rep.TotalDeadLetters)
		}
	}
	return tw.Flush()
}
