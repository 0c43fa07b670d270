package outbox

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/oncely/oncely/consumer"
)

// markTimeout bounds marking and committing a published round.
const markTimeout = 10 * time.Second

// round claims up to BatchSize rows (see claim), publishes them (one Publish
// per destination, destinations in parallel), marks those the broker
// confirmed and commits. It returns how many rows it claimed. A destination
// whose Publish failed keeps its rows unpublished and makes round fail.
// self is the wake channel of the round's worker.
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

	done, perr := r.publish(ctx, rows)
	if r.hooks.afterPublish != nil {
		r.hooks.afterPublish(ctx, tx.Conn().PgConn().PID())
	}
	if len(done) > 0 {
		// Mark even when ctx ended meanwhile: the broker has the messages,
		// and a round left unmarked is published again.
		mctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), markTimeout)
		defer cancel()
		if _, err := tx.Exec(mctx, "UPDATE "+r.table+" SET published_at = now() WHERE seq = ANY($1)", done); err != nil {
			return len(rows), errors.Join(perr, fmt.Errorf("mark published: %w", err))
		}
		if err := tx.Commit(mctx); err != nil {
			return len(rows), errors.Join(perr, fmt.Errorf("commit: %w", err))
		}
		r.metrics.published(len(done))
	}
	if perr != nil {
		r.metrics.failed(len(rows) - len(done))
	}
	return len(rows), perr
}

// publish sends rows, grouped by destination in row order, one Publish call
// per destination, the destinations in parallel. It returns the seqs the
// broker confirmed and the joined errors of the others.
func (r *Relay) publish(ctx context.Context, rows []row) ([]int64, error) {
	var order []string
	byDest := map[string][]row{}
	for _, rw := range rows {
		if _, ok := byDest[rw.destination]; !ok {
			order = append(order, rw.destination)
		}
		byDest[rw.destination] = append(byDest[rw.destination], rw)
	}
	errs := make([]error, len(order))
	var wg sync.WaitGroup
	for i, dest := range order {
		wg.Add(1)
		go func() {
			defer wg.Done()
			group := byDest[dest]
			msgs := make([]*consumer.Message, len(group))
			for j, rw := range group {
				msgs[j] = rw.msg
			}
			pctx, cancel := context.WithTimeout(ctx, r.cfg.PublishTimeout)
			defer cancel()
			if err := r.broker.Publish(pctx, dest, msgs...); err != nil {
				errs[i] = fmt.Errorf("publish %d messages to %s: %w", len(msgs), dest, err)
			}
		}()
	}
	wg.Wait()
	var done []int64
	for i, dest := range order {
		if errs[i] != nil {
			continue
		}
		for _, rw := range byDest[dest] {
			done = append(done, rw.seq)
		}
	}
	return done, errors.Join(errs...)
}
