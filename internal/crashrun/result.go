package crashrun

import (
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"
)

// Kill is what one kill did.
type Kill struct {
	// After is the kill's moment after the round's processes started.
	After time.Duration
	// Aimed reports a kill made once Target of the round's payments had an
	// effect (see Config.TimedEvery); a timed kill has Target 0.
	Aimed  bool
	Target int
	// Victims is the number of the round's ledger processes the kill
	// SIGKILLed: 1 to Config.Instances.
	Victims int
	// DoneBefore is the number of the round's payments with an effect when
	// the kill landed: 0 < DoneBefore < Batch means mid-stream.
	DoneBefore int
	// Lost and Duplicated count the round's message IDs with no effect and
	// with more than one.
	Lost, Duplicated int
	// Resumed is the time from the SIGKILL to the round's first new effect,
	// made by a restarted process or, with several instances, by a
	// survivor (to within the 50ms the harness polls at); zero when the
	// batch was done before the kill.
	Resumed time.Duration
	// Relay is the round's relay kill (Config.EndToEnd; zero otherwise).
	Relay RelayKill
	// EventsLost and EventsTwice count the round's payments with no
	// downstream row and with more than one (Config.EndToEnd).
	EventsLost, EventsTwice int
}

// Result is the outcome of one Run.
type Result struct {
	Broker string
	Dedupe bool
	// HandlerBatch is the run's Config.HandlerBatch (0: per message).
	HandlerBatch int
	// Instances is the run's Config.Instances: ledger processes per round.
	Instances int
	// Kills has one entry per round.
	Kills []Kill
	// Messages is the number of counted payments (poison excluded).
	Messages int
	// Poison is the number of poison payments, PoisonDeadLettered how many
	// of them reached the dead-letter destination.
	Poison, PoisonDeadLettered int
	// BadExits counts ledger processes that did not exit 0 after SIGTERM;
	// BadExitLogs holds the end of each one's log.
	BadExits    int
	BadExitLogs []string
	// Elapsed is the run's duration.
	Elapsed time.Duration

	// EndToEnd reports a Config.EndToEnd run; the fields below are set
	// only then.
	EndToEnd bool
	// Accounts is the number of accounts with ledger entries.
	Accounts int
	// EventsOutOfOrder is the number of downstream rows that, in the order
	// the downstream applied its account's events, do not carry the
	// previous row's seq plus one (the first carries 1): reordered, gapped
	// or repeated events.
	EventsOutOfOrder int
	// AccountsMismatched is the number of accounts whose downstream rows
	// do not number their ledger entries.
	AccountsMismatched int
}

// EventsLost is the number of payments with no downstream row.
func (r Result) EventsLost() int { return r.sum(func(k Kill) int { return k.EventsLost }) }

// EventsTwice is the number of payments with more than one downstream row.
func (r Result) EventsTwice() int { return r.sum(func(k Kill) int { return k.EventsTwice }) }

// RelayMidRound is the number of relay kills that left events the broker
// had confirmed and the relay had not marked (RelayKill.Unmarked > 0).
func (r Result) RelayMidRound() int {
	return r.count(func(k Kill) bool { return k.Relay.Unmarked > 0 })
}

// RelayKilledInMark is the number of relay kills that landed while a relay
// round waited at the gate, published and not marked.
func (r Result) RelayKilledInMark() int {
	return r.count(func(k Kill) bool { return k.Relay.Waited && k.Relay.Mode == RelayInMark })
}

// RelayKilledAfterMark is the number of relay kills that landed right
// after waiting relay rounds committed their marks.
func (r Result) RelayKilledAfterMark() int {
	return r.count(func(k Kill) bool { return k.Relay.Waited && k.Relay.Mode == RelayAfterMark })
}

// KillsWithLoss is the number of kills after which payments were lost.
func (r Result) KillsWithLoss() int { return r.count(func(k Kill) bool { return k.Lost > 0 }) }

// KillsWithDuplicates is the number of kills after which payments were
// applied twice.
func (r Result) KillsWithDuplicates() int {
	return r.count(func(k Kill) bool { return k.Duplicated > 0 })
}

// MidStream is the number of kills that landed while the round's batch was
// partly done.
func (r Result) MidStream() int {
	b := r.perRound()
	return r.count(func(k Kill) bool { return k.DoneBefore > 0 && k.DoneBefore < b })
}

// AimedKills is the number of aimed kills (Kill.Aimed).
func (r Result) AimedKills() int { return r.count(func(k Kill) bool { return k.Aimed }) }

// AimedMidStream is the number of aimed kills that landed while the
// round's batch was partly done: all of them, unless the batch's work
// outran the harness's count.
func (r Result) AimedMidStream() int {
	b := r.perRound()
	return r.count(func(k Kill) bool { return k.Aimed && k.DoneBefore > 0 && k.DoneBefore < b })
}

// perRound is the number of good payments a round publishes.
func (r Result) perRound() int {
	if len(r.Kills) == 0 {
		return 0
	}
	return r.Messages / len(r.Kills)
}

// Lost and Duplicated are the totals over all kills.
func (r Result) Lost() int { return r.sum(func(k Kill) int { return k.Lost }) }

// Duplicated is the number of payments applied more than once.
func (r Result) Duplicated() int { return r.sum(func(k Kill) int { return k.Duplicated }) }

// Worst describes the worst kill: "none", "12 twice" or "3 lost".
func (r Result) Worst() string {
	lost, dup := 0, 0
	for _, k := range r.Kills {
		lost, dup = max(lost, k.Lost), max(dup, k.Duplicated)
	}
	switch {
	case lost > 0 && dup > 0:
		return fmt.Sprintf("%d lost, %d twice", lost, dup)
	case lost > 0:
		return fmt.Sprintf("%d lost", lost)
	case dup > 0:
		return fmt.Sprintf("%d twice", dup)
	}
	return "none"
}

func (r Result) count(f func(Kill) bool) int {
	n := 0
	for _, k := range r.Kills {
		if f(k) {
			n++
		}
	}
	return n
}

func (r Result) sum(f func(Kill) int) int {
	n := 0
	for _, k := range r.Kills {
		n += f(k)
	}
	return n
}

// WriteTable prints results as a table: broker, ledger processes per
// round, dedupe, kills, kills mid-stream, aimed kills mid-stream, kills with
// loss, kills with duplicates, worst kill, the totals, and the median and
// longest time from a kill to the next effect (see Result.Resume).
func WriteTable(w io.Writer, results []Result) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "broker\tinstances\tdedupe\tkills\tmid-stream\taimed mid-stream\tkills with loss\tkills with duplicates\tworst kill\tlost\tduplicated\tmessages\tpoison in DLQ\tunclean exits\tresume median\tresume max\ttime")
	for _, r := range results {
		n := len(r.Kills)
		median, longest := r.Resume()
		fmt.Fprintf(tw, "%s\t%d\t%t\t%d\t%d\t%d of %d\t%d of %d\t%d of %d\t%s\t%d\t%d\t%d\t%d of %d\t%d\t%s\t%s\t%s\n",
			r.Broker, max(r.Instances, 1), r.Dedupe, n, r.MidStream(), r.AimedMidStream(), r.AimedKills(), r.KillsWithLoss(), n, r.KillsWithDuplicates(), n, r.Worst(),
			r.Lost(), r.Duplicated(), r.Messages, r.PoisonDeadLettered, r.Poison, r.BadExits,
			formatResume(median), formatResume(longest), r.Elapsed.Round(time.Second))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return writeEndToEnd(w, results)
}

// writeEndToEnd prints the end-to-end columns of the EndToEnd results, if
// any, as a second table: relay kills, those that landed mid-round (left
// events confirmed and unmarked), those made while a relay round waited to
// mark and right after waiting rounds marked, events lost, applied twice
// and out of per-account order.
func writeEndToEnd(w io.Writer, results []Result) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	header := false
	for _, r := range results {
		if !r.EndToEnd {
			continue
		}
		if !header {
			fmt.Fprintln(tw, "\nbroker\trelay kills\tmid-round\tin mark\tafter mark\tevents lost\tevents twice\tout of order\taccounts\taccounts mismatched\tpayments")
			header = true
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\n", r.Broker, len(r.Kills), r.RelayMidRound(), r.RelayKilledInMark(), r.RelayKilledAfterMark(),
			r.EventsLost(), r.EventsTwice(), r.EventsOutOfOrder, r.Accounts, r.AccountsMismatched, r.Messages)
	}
	return tw.Flush()
}

// Resume returns the median and the longest Kill.Resumed over the kills
// after which work was left: how long a SIGKILL stopped processing, the
// restart included. Both are zero when no kill left work.
func (r Result) Resume() (median, longest time.Duration) {
	var ds []time.Duration
	for _, k := range r.Kills {
		if k.Resumed > 0 {
			ds = append(ds, k.Resumed)
		}
	}
	if len(ds) == 0 {
		return 0, 0
	}
	slices.Sort(ds)
	return ds[len(ds)/2], ds[len(ds)-1]
}

// formatResume prints d to 0.1s, or "-" for zero (nothing measured).
func formatResume(d time.Duration) string {
	if d == 0 {
		return "-"
	}
	return d.Round(100 * time.Millisecond).String()
}
