package crashrun

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// aimPercent bounds an aimed kill's target: 1 to aimPercent % of a round's
// good payments, so that at least a fifth of the round is left to the
// restart however fast the machine works through it.
const aimPercent = 80

// aimPoll is how often an aimed kill counts the round's effects.
const aimPoll = 10 * time.Millisecond

// killPlan is one round's kill: which instances die, and when.
type killPlan struct {
	// victims are the indexes of the instances to SIGKILL, in order.
	victims []int
	// aimed kills once target of the round's payments have an effect;
	// otherwise the kill lands after since the processes' start.
	aimed  bool
	target int
	after  time.Duration
}

// plan draws the kill of round (1-based): 1 + (round-1) mod Instances
// instances drawn at random; timed every TimedEvery-th round, aimed
// otherwise (timed too when a round has too few payments to aim at).
func (c Config) plan(round int) killPlan {
	p := killPlan{victims: c.Rand.Perm(c.Instances)[:1+(round-1)%c.Instances]}
	slices.Sort(p.victims)
	span := (c.Batch - 1) * aimPercent / 100
	if round%c.TimedEvery == 0 || span < 1 {
		p.after = c.MinKill + time.Duration(c.Rand.Int64N(int64(c.MaxKill-c.MinKill)+1))
		return p
	}
	p.aimed, p.target = true, 1+c.Rand.IntN(span)
	return p
}

// await waits for plan's moment: after plan.after since started, or until
// plan.target payments of the round (IDs starting with prefix) have an
// effect. It fails when one of procs exits by itself, or when an aimed
// target is not reached within timeout.
func (w *watcher) await(ctx context.Context, plan killPlan, prefix string, started time.Time, timeout time.Duration, procs []*process) error {
	if !plan.aimed {
		return sleep(ctx, time.Until(started.Add(plan.after)))
	}
	deadline := time.Now().Add(timeout)
	for {
		n, err := w.done(ctx, prefix)
		if err != nil {
			return err
		}
		if n >= plan.target {
			return nil
		}
		if err := exitedEarly(procs); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("aimed kill: only %d payments had an effect after %s, waiting for %d", n, timeout, plan.target)
		}
		if err := sleep(ctx, aimPoll); err != nil {
			return err
		}
	}
}

// exitedEarly returns the first error of process.exitedEarly among procs.
func exitedEarly(procs []*process) error {
	for _, p := range procs {
		if err := p.exitedEarly(); err != nil {
			return err
		}
	}
	return nil
}
