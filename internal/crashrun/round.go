package crashrun

import (
	"context"
	"fmt"
	"time"
)

// playRound plays round (1-based) after its batch, IDs starting with
// prefix, was published: it starts the ledger instances together, SIGKILLs
// the plan's victims at the plan's moment (and, with e2e, the relay at a
// moment of its own), starts the victims again at once, waits until the
// batch's good payments all have an effect, and stops every instance with
// SIGTERM. It appends the round's Kill to res.
func playRound(ctx context.Context, cfg Config, res *Result, round int, prefix string, ledgers *fleet, w *watcher, e2e *endToEnd) error {
	plan := cfg.plan(round)
	name := fmt.Sprintf("r%03d", round)
	if err := ledgers.startAll(name); err != nil {
		return err
	}
	started := ledgers.procs[0].started
	var relayKilled chan relayKillResult
	if e2e != nil {
		var err error
		if relayKilled, err = e2e.startAndKill(ctx, name+"-killed", relayMode(round)); err != nil {
			ledgers.killAll()
			return err
		}
	}
	if err := w.await(ctx, plan, prefix, started, cfg.RoundTimeout, ledgers.procs); err != nil {
		ledgers.killAll()
		return fmt.Errorf("crashtest: round %d: %w (ledger logs in %s)", round, err, cfg.LogDir)
	}
	killed := time.Now()
	ledgers.kill(plan.victims)
	done, err := w.done(ctx, prefix)
	if err != nil {
		ledgers.killAll()
		return err
	}
	res.Kills = append(res.Kills, Kill{After: killed.Sub(started), Aimed: plan.aimed, Target: plan.target, Victims: len(plan.victims), DoneBefore: done})
	kill := &res.Kills[len(res.Kills)-1]

	for _, i := range plan.victims {
		if err := ledgers.start(i, fmt.Sprintf("%s-%d-restart", name, i)); err != nil {
			ledgers.killAll()
			return err
		}
	}
	resumed, werr := w.waitDone(ctx, prefix, cfg.Batch, done, cfg.RoundTimeout, ledgers.procs)
	if e2e != nil {
		rk := <-relayKilled
		kill.Relay = rk.kill
		if werr == nil {
			werr = rk.err
		}
		if werr == nil {
			werr = e2e.restartRelay(ctx, res, name+"-restart", prefix, cfg.Batch-1, ledgers.procs)
		}
	}
	ledgers.stopAll(res)
	if werr != nil {
		return fmt.Errorf("crashtest: round %d: %w (ledger logs in %s)", round, werr, cfg.LogDir)
	}
	if !resumed.IsZero() {
		kill.Resumed = resumed.Sub(killed)
	}
	moment := "timed"
	if plan.aimed {
		moment = fmt.Sprintf("aimed at %d", plan.target)
	}
	cfg.Progress("%s dedupe=%t: kill %d/%d (%s, %d of %d instances) at %s, %d of %d done before it, next effect %s after it%s", cfg.Name, cfg.Dedupe, round, cfg.Kills,
		moment, len(plan.victims), cfg.Instances, kill.After.Round(time.Millisecond), done, cfg.Batch-1, formatResume(kill.Resumed), kill.Relay.describe())
	return nil
}
