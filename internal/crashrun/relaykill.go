package crashrun

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// With Config.EndToEnd, relay kills land inside a relay round (after the broker confirmed a
// publish, before the round's mark committed) through a gate in the
// database, not in the relay: a statement trigger on the run's outbox table
// makes every UPDATE of it (the relay's mark) wait for an advisory lock
// that the harness holds while the gate is closed. At the round's random
// relay moment the harness closes the gate and waits until a relay
// connection waits at it (pg_stat_activity: that connection's round has
// published its rows and not marked them). Then, by the round's mode:
//
//   - RelayInMark: SIGKILL the relay while it waits to mark;
//   - RelayAfterMark: open the gate and SIGKILL the relay as soon as the
//     waiting connections committed their marks (a relay that marked
//     before publishing would be publishing now);
//   - RelayRandom: no gate, SIGKILL at the random moment itself.
//
// Whatever the mode, the kill's effect is observed, not assumed: with the
// relay dead, an event the downstream applied whose outbox row is still
// unpublished was confirmed by the broker and not marked
// (RelayKill.Unmarked).
//
// These are the relay kill modes (RelayKill.Mode).
const (
	RelayInMark    = "in-mark"
	RelayAfterMark = "after-mark"
	RelayRandom    = "random"
)

// relayMode is the relay kill mode of round (1-based): of every 5 rounds, 3
// kill in the mark, 1 after it, 1 at random.
func relayMode(round int) string {
	switch round % 5 {
	case 0:
		return RelayRandom
	case 3:
		return RelayAfterMark
	}
	return RelayInMark
}

// gateWait bounds the wait for a relay connection at the closed gate (a
// round whose ledger has nothing left to send never gets there; on NATS a
// killed ledger's payments come back after the 5 s AckWait).
const gateWait = 6 * time.Second

// unmarkedWait bounds the wait, after a relay kill, for the downstream to
// apply an event the killed relay published and did not mark.
const unmarkedWait = time.Second

// RelayKill is what one relay kill did; see RelayInMark for how the
// harness times it.
type RelayKill struct {
	// After is the round's relay moment after the relay's start: the kill's,
	// or in the gated modes the gate's closing, the kill following once a
	// relay round waited at it.
	After time.Duration
	// Mode is RelayInMark, RelayAfterMark or RelayRandom.
	Mode string
	// Waited reports that a relay round waited at the gate, published and
	// not marked: the kill landed then (RelayInMark) or right after the
	// marks committed (RelayAfterMark).
	Waited bool
	// Unmarked is the number of events the downstream applied, after the
	// kill, whose outbox rows were still unpublished: the broker had them,
	// the killed relay had not marked them. Unmarked > 0 is a mid-round kill.
	Unmarked int
}

type relayKillResult struct {
	kill RelayKill
	err  error
}

// startAndKill starts a relay process named name and kills it (killRelay)
// in the background; the result arrives on the channel.
func (e *endToEnd) startAndKill(ctx context.Context, name, mode string) (chan relayKillResult, error) {
	rp, err := e.relay.start(name)
	if err != nil {
		return nil, err
	}
	ch := make(chan relayKillResult, 1)
	go func() {
		k, err := e.killRelay(ctx, rp, mode)
		ch <- relayKillResult{k, err}
	}()
	return ch, nil
}

// killRelay SIGKILLs p at the round's relay moment, in mode (see
// relayMode), and observes what the kill left.
func (e *endToEnd) killRelay(ctx context.Context, p *process, mode string) (k RelayKill, err error) {
	k = RelayKill{Mode: mode}
	defer func() {
		if err != nil {
			p.kill()
		}
	}()
	k.After = e.cfg.MinKill + time.Duration(e.cfg.Rand.Int64N(int64(e.cfg.MaxKill-e.cfg.MinKill)+1))
	if err := sleep(ctx, time.Until(p.started.Add(k.After))); err != nil {
		return k, err
	}
	if mode != RelayRandom {
		open, waited, err := e.closeGate(ctx)
		// The killed relay's connection may still wait at the gate; open
		// runs after the count below, and the connection goes on, finds its
		// client gone and rolls back.
		defer open()
		if err != nil {
			return k, err
		}
		k.Waited = len(waited) > 0
		switch {
		case k.Waited && mode == RelayInMark:
			// Let the other workers' rounds, if any have rows, pile up at
			// the gate too: the kill then catches several rounds published.
			if err := sleep(ctx, time.Duration(e.cfg.Rand.Int64N(int64(300*time.Millisecond)))); err != nil {
				return k, err
			}
		case k.Waited && mode == RelayAfterMark:
			open()
			if err := e.waitCommitted(ctx, waited); err != nil {
				return k, err
			}
		}
	}
	p.kill()
	deadline := time.Now().Add(unmarkedWait)
	for {
		if err := e.pool.QueryRow(ctx, "SELECT count(*) FROM "+e.down.table+" d JOIN "+e.outbox+
			" o ON o.message_id = d.event_id WHERE o.published_at IS NULL").Scan(&k.Unmarked); err != nil {
			return k, err
		}
		if k.Unmarked > 0 || time.Now().After(deadline) {
			return k, nil
		}
		if err := sleep(ctx, 20*time.Millisecond); err != nil {
			return k, err
		}
	}
}

// closeGate closes the gate and waits, up to gateWait, until relay
// connections wait at it; it returns their backend PIDs (none when no
// round got there in time) and open, which opens the gate (idempotent).
func (e *endToEnd) closeGate(ctx context.Context) (open func(), waiting []uint32, err error) {
	conn, err := e.pool.Acquire(ctx)
	if err != nil {
		return func() {}, nil, err
	}
	opened := false
	open = func() {
		if !opened {
			opened = true
			// A released connection keeps session locks: unlock first.
			_, _ = conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock_all()")
			conn.Release()
		}
	}
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", e.gateKey); err != nil {
		return open, nil, fmt.Errorf("crashtest: closing the relay gate: %w", err)
	}
	deadline := time.Now().Add(gateWait)
	for time.Now().Before(deadline) {
		rows, err := e.pool.Query(ctx, `SELECT pid FROM pg_stat_activity
			WHERE application_name = $1 AND wait_event_type = 'Lock' AND wait_event = 'advisory'`, e.appName)
		if err != nil {
			return open, nil, err
		}
		if waiting, err = pgx.CollectRows(rows, pgx.RowTo[uint32]); err != nil || len(waiting) > 0 {
			return open, waiting, err
		}
		if err := sleep(ctx, 10*time.Millisecond); err != nil {
			return open, nil, err
		}
	}
	return open, nil, nil
}

// waitCommitted polls, without pausing, until none of the backends pids is
// in a transaction any more: their rounds' marks committed.
func (e *endToEnd) waitCommitted(ctx context.Context, pids []uint32) error {
	deadline := time.Now().Add(gateWait)
	for time.Now().Before(deadline) {
		var busy bool
		if err := e.pool.QueryRow(ctx, `SELECT count(*) > 0 FROM pg_stat_activity
			WHERE pid = ANY($1) AND state IN ('active', 'idle in transaction')`, pids).Scan(&busy); err != nil {
			return err
		}
		if !busy {
			return nil
		}
	}
	return nil
}

// describe prints k for the progress line ("" without a relay).
func (k RelayKill) describe() string {
	if k.After == 0 {
		return ""
	}
	return fmt.Sprintf("; relay killed at %s (%s, a round waited to mark: %t), %d events applied and unmarked", k.After.Round(time.Millisecond), k.Mode, k.Waited, k.Unmarked)
}
