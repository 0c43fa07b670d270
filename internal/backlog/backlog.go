// Package backlog reads how far a consumer is behind (Kafka lag, queue and
// dead-letter depth) and orders it for people: the consumed source first,
// then its retry tiers by delay, then the dead-letter destination. The
// oncely lag command and the console both show it this way.
package backlog

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"

	"github.com/oncely/oncely/consumer"
)

// Reader is the part of adapters.Broker that Read uses.
type Reader interface {
	Backlog(ctx context.Context, source, consumerName string) ([]consumer.Backlog, error)
}

// Report is a consumer's backlog on one source.
type Report struct {
	// Rows are sorted: source, retry tiers by delay, the rest; by
	// partition within each. Lag and DeadLetters are -1 when unknown.
	Rows []consumer.Backlog
	// NeverCommitted: the consumer group has no committed offset on any
	// partition of the source itself (Kafka); its lag then counts every
	// retained record.
	NeverCommitted bool
	// TotalLag and TotalDeadLetters add up the known values of Rows.
	TotalLag, TotalDeadLetters int64
}

// Read asks r for the backlog of consumerName on source and sorts it; with
// perPartition false the rows are summed to one per topic or queue
// (Partition -1). An error from r (adapters.ErrNoSource, say) is returned
// as it is.
func Read(ctx context.Context, r Reader, source, consumerName string, perPartition bool) (Report, error) {
	lines, err := r.Backlog(ctx, source, consumerName)
	if err != nil {
		return Report{}, err
	}
	Sort(source, lines)
	rep := Report{NeverCommitted: neverCommitted(source, lines)}
	if !perPartition {
		lines = SumPerSource(lines)
	}
	rep.Rows = lines
	for _, l := range lines {
		rep.TotalLag = AddKnown(rep.TotalLag, l.Lag)
		rep.TotalDeadLetters = AddKnown(rep.TotalDeadLetters, l.DeadLetters)
	}
	return rep, nil
}

// Sort orders lines by source (the consumed source, retry tiers by delay,
// the rest by name), then partition.
func Sort(source string, lines []consumer.Backlog) {
	slices.SortStableFunc(lines, func(x, y consumer.Backlog) int {
		return cmp.Or(cmp.Compare(rank(source, x.Source), rank(source, y.Source)),
			cmp.Compare(x.Source, y.Source), cmp.Compare(x.Partition, y.Partition))
	})
}

// SumPerSource adds up sorted lines per source: lag and dead letters, each
// -1 (unknown) only when no line of the source knows it; NeverCommitted
// when it holds for every partition of the source.
func SumPerSource(lines []consumer.Backlog) []consumer.Backlog {
	var out []consumer.Backlog
	for _, l := range lines {
		if n := len(out); n > 0 && out[n-1].Source == l.Source {
			out[n-1].Lag = AddKnown(out[n-1].Lag, l.Lag)
			out[n-1].DeadLetters = AddKnown(out[n-1].DeadLetters, l.DeadLetters)
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

// AddKnown adds two counts of which either may be -1 (unknown): the sum is
// unknown only when both are.
func AddKnown(a, b int64) int64 {
	switch {
	case a < 0:
		return b
	case b < 0:
		return a
	}
	return a + b
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

// rank orders a backlog's sources: the consumed source, then retry tiers
// by delay (named <source>.<consumer>.retry.<delay>), then the rest (the
// dead-letter destination).
func rank(source, name string) time.Duration {
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
