package outbox

import (
	"context"
	"fmt"
	"time"
)

// markTimeout bounds marking and committing a published round.
const markTimeout = 10 * time.Second

// round claims up to BatchSize rows (see claim), publishes them (one Publish
// per destination, destinations in parallel), marks those the broker
// confirmed, records the rows it refused (see refuse) and commits. It
// returns how many rows it claimed. A destination none of whose rows passed
// keeps its rows unpublished and is held (see destHolds); that is not the
// round's error, which is kept for the database's failures, after which the
// worker backs off. self is the wake channel of the round's worker.
func (r *Relay) round(ctx context.Context, self chan struct{}) (int, error) {
	tx, err := r.pool.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("begin: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()

	rows, more, err := r.claim(ctx, tx)
	if err != nil {
		return 0, err
	}
	if more {
		// The window holds keys this round left: another worker may take
		// them now, while this one publishes.
		r.wakeOthers(self)
	}
	if len(rows) == 0 {
		return 0, tx.Commit(ctx)
	}

	results := r.publish(ctx, rows)
	if r.hooks.afterPublish != nil {
		r.hooks.afterPublish(ctx, tx.Conn().PgConn().PID())
	}
	var (
		done    []int64
		refused []refusal
		waiting int
	)
	for _, res := range results {
		done = append(done, res.done...)
		refused = append(refused, res.refused...)
		waiting += res.waiting
	}
	r.metrics.failed(waiting + len(refused))
	if len(done) > 0 || len(refused) > 0 {
		// Mark even when ctx ended meanwhile: the broker has the messages,
		// and a round left unmarked is published again.
		mctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), markTimeout)
		defer cancel()
		if len(done) > 0 {
			if _, err := tx.Exec(mctx, "UPDATE "+r.table+" SET published_at = now() WHERE seq = ANY($1)", done); err != nil {
				return len(rows), fmt.Errorf("mark published: %w", err)
			}
		}
		dead, err := r.refuse(mctx, tx, refused)
		if err != nil {
			return len(rows), err
		}
		if err := tx.Commit(mctx); err != nil {
			return len(rows), fmt.Errorf("commit: %w", err)
		}
		r.metrics.published(len(done))
		r.metrics.refused(len(refused) - len(dead))
		r.metrics.deadLettered(len(dead))
		r.logRefused(refused, dead)
	}
	r.settleDestinations(results)
	return len(rows), nil
}

// settleDestinations holds each destination none of whose rows passed and
// releases those that passed again.
func (r *Relay) settleDestinations(results []destResult) {
	now := time.Now()
	for _, res := range results {
		if res.err != nil {
			if d, held := r.holds.hold(res.dest, now); held {
				r.cfg.Logger.Warn("outbox relay: publishing to a destination failed; holding it, other destinations go on",
					"schema", r.cfg.Schema, "destination", res.dest, "rows", res.waiting, "retry_in", d.String(), "error", res.err)
			}
		} else if r.holds.release(res.dest) {
			r.cfg.Logger.Info("outbox relay: destination publishes again", "schema", r.cfg.Schema, "destination", res.dest)
		}
	}
	r.metrics.failingDestinations(r.holds.failing())
}
