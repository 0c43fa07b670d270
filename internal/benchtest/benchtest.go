// Package benchtest keeps the rounds of an adapter benchmark that drains
// the same messages with a hand-written client loop (raw) and with oncely,
// alternately, so both see the same machine load; it reports the total rates
// and oncely's as a multiple of raw (x_baseline: the median of the rounds'
// ratios).
package benchtest

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// EnvInt returns the positive integer in the environment variable name, or
// def.
func EnvInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// CPUTime is the process's user+system CPU time: the consumer's own cost,
// which machine load disturbs far less than wall-clock rates. It is 0 when
// unknown.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Rounds accumulates rounds of Messages messages each.
type Rounds struct {
	Messages int

	raw, oncely       time.Duration
	rawCPU, oncelyCPU time.Duration
	ratios            []float64
}

// Add records one round's drain times and writes the round's line to
// stderr at once: a benchmark's log keeps only its first 10 lines, and
// Report's summary, logged last, must stay among them.
func (r *Rounds) Add(tb testing.TB, raw, oncely time.Duration) {
	tb.Helper()
	r.raw += raw
	r.oncely += oncely
	ratio := raw.Seconds() / oncely.Seconds()
	r.ratios = append(r.ratios, ratio)
	n := float64(r.Messages)
	fmt.Fprintf(os.Stderr, "%s: round %d: raw %.0f msgs/s, oncely %.0f msgs/s, ratio %.3f\n", tb.Name(), len(r.ratios), n/raw.Seconds(), n/oncely.Seconds(), ratio)
}

// AddCPU records one round's process CPU time on each side; Report then
// reports CPU per message too.
func (r *Rounds) AddCPU(raw, oncely time.Duration) {
	r.rawCPU += raw
	r.oncelyCPU += oncely
}

// Total is the number of messages drained by each side so far.
func (r *Rounds) Total() float64 { return float64(r.Messages * len(r.ratios)) }

// Report reports raw_msgs/s, msgs/s and x_baseline (and the CPU per message
// when AddCPU was called), and logs a summary naming the raw loop as
// baseline (for example "raw go-redis").
func (r *Rounds) Report(b *testing.B, baseline string) {
	b.Helper()
	sorted := slices.Sorted(slices.Values(r.ratios))
	median := sorted[len(sorted)/2]
	if len(sorted)%2 == 0 {
		median = (sorted[len(sorted)/2-1] + sorted[len(sorted)/2]) / 2
	}
	total := r.Total()
	b.ReportMetric(total/r.raw.Seconds(), "raw_msgs/s")
	b.ReportMetric(total/r.oncely.Seconds(), "msgs/s")
	b.ReportMetric(median, "x_baseline")
	if r.rawCPU > 0 || r.oncelyCPU > 0 {
		b.ReportMetric(float64(r.rawCPU.Microseconds())/total, "raw_cpu_us/msg")
		b.ReportMetric(float64(r.oncelyCPU.Microseconds())/total, "cpu_us/msg")
	}
	b.Logf("%d messages x %d rounds: %s %.0f msgs/s, oncely %.0f msgs/s; ratio median %.3f (per round %.3f)",
		r.Messages, len(r.ratios), baseline, total/r.raw.Seconds(), total/r.oncely.Seconds(), median, sorted)
}
