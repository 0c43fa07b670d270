package main

import (
	"context"
	"fmt"
	"strconv"
	"text/tabwriter"
)

func runLag(ctx context.Context, a *app, args []string) error {
	fs := a.flags("lag", "oncely lag --broker URL --source S --consumer C", `
Shows how far a consumer is behind, without joining its consumer group:
for Kafka the lag per partition (end offset minus committed offset) and the
depth of the dead-letter topic; for RabbitMQ, SQS and mem:// the messages
waiting in the queue (ready and unacknowledged) and in its dead-letter queue.`)
	var bf brokerFlags
	bf.register(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	br, err := bf.open(ctx, a, "lag")
	if err != nil {
		return err
	}
	defer br.Close()
	lines, err := br.Backlog(ctx, bf.source, bf.consumer)
	if err != nil {
		return fmt.Errorf("lag: %w", err)
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SOURCE\tPARTITION\tLAG\tDEAD LETTERS")
	var total, dead int64
	for _, l := range lines {
		part, lag, dl := "-", "-", "-"
		if l.Partition >= 0 {
			part = strconv.Itoa(int(l.Partition))
		}
		if l.Lag >= 0 {
			lag = strconv.FormatInt(l.Lag, 10)
			total += l.Lag
		}
		if l.DeadLetters >= 0 {
			dl = strconv.FormatInt(l.DeadLetters, 10)
			dead += l.DeadLetters
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", l.Source, part, lag, dl)
	}
	if len(lines) > 1 {
		fmt.Fprintf(tw, "total\t\t%d\t%d\n", total, dead)
	}
	return tw.Flush()
}
