package outbox

import (
	"context"
	"fmt"
	"sync"

	"github.com/oncely/oncely/consumer"
)

// destResult is what publishing one destination's rows of a round came to.
type destResult struct {
	dest string
	// done are the seqs the broker confirmed.
	done []int64
	// refused are rows the broker refused while another row of dest passed
	// in the same round: the row's fault, not the destination's.
	refused []refusal
	// err is the destination's failure when none of its rows passed: an
	// outage and a bad row look alike then, so no row is blamed.
	err error
	// waiting counts rows neither confirmed nor refused (published again
	// later).
	waiting int
}

// refusal is a row the broker refused, with its reason.
type refusal struct {
	row row
	err error
}

// publish sends rows grouped by destination in row order, the destinations
// in parallel, and returns one result per destination.
func (r *Relay) publish(ctx context.Context, rows []row) []destResult {
	var order []string
	byDest := map[string][]row{}
	for _, rw := range rows {
		if _, ok := byDest[rw.destination]; !ok {
			order = append(order, rw.destination)
		}
		byDest[rw.destination] = append(byDest[rw.destination], rw)
	}
	results := make([]destResult, len(order))
	var wg sync.WaitGroup
	for i, dest := range order {
		wg.Go(func() { results[i] = r.publishDest(ctx, dest, byDest[dest]) })
	}
	wg.Wait()
	return results
}

// publishDest publishes one destination's rows with one Publish call. When
// it fails and the rows belong to several owners (keys, or rows of empty
// keys), isolate looks for the rows at fault.
func (r *Relay) publishDest(ctx context.Context, dest string, rows []row) destResult {
	err := r.send(ctx, dest, rows)
	if err == nil {
		return destResult{dest: dest, done: seqs(rows)}
	}
	owners := byOwner(rows)
	if len(owners) < 2 || ctx.Err() != nil {
		return destResult{dest: dest, err: err, waiting: len(rows)}
	}
	return r.isolate(ctx, dest, owners, err)
}

// isolate tells a bad row from a failing destination after a Publish of
// several owners' rows failed with err, within one PublishTimeout:
//
//  1. each owner's rows are published with one call, in order of first
//     row, while time is left;
//  2. if none passed, the destination failed (err) and no row is blamed;
//  3. otherwise the rows of each owner that failed are published one at a
//     time: those before its first refused row pass, the refused row is
//     blamed, and the owner's later rows wait behind it.
//
// A row whose call ended because the search's time ran out is not blamed.
func (r *Relay) isolate(ctx context.Context, dest string, owners [][]row, err error) destResult {
	sctx, cancel := context.WithTimeout(ctx, r.cfg.PublishTimeout)
	defer cancel()
	res := destResult{dest: dest}
	var failed [][]row
	for i, rows := range owners {
		if sctx.Err() != nil {
			failed = append(failed, owners[i:]...)
			break
		}
		if r.broker.Publish(sctx, dest, messages(rows)...) == nil {
			res.done = append(res.done, seqs(rows)...)
		} else {
			failed = append(failed, rows)
		}
	}
	if len(res.done) == 0 {
		res.err = err
		res.waiting = countRows(owners)
		return res
	}
	for _, rows := range failed {
		for j, rw := range rows {
			if sctx.Err() != nil {
				res.waiting += len(rows) - j
				break
			}
			perr := r.broker.Publish(sctx, dest, rw.msg)
			if perr == nil {
				res.done = append(res.done, rw.seq)
				continue
			}
			if sctx.Err() != nil {
				res.waiting += len(rows) - j
			} else {
				res.refused = append(res.refused, refusal{row: rw, err: perr})
				res.waiting += len(rows) - j - 1
			}
			break
		}
	}
	return res
}

// send publishes rows to dest with one Publish call within PublishTimeout.
func (r *Relay) send(ctx context.Context, dest string, rows []row) error {
	pctx, cancel := context.WithTimeout(ctx, r.cfg.PublishTimeout)
	defer cancel()
	if err := r.broker.Publish(pctx, dest, messages(rows)...); err != nil {
		return fmt.Errorf("publish %d messages to %s: %w", len(rows), dest, err)
	}
	return nil
}

// byOwner splits one destination's rows (in row order) by what orders them:
// a key's rows together, each row of an empty key alone, in order of first
// row.
func byOwner(rows []row) [][]row {
	var owners [][]row
	index := map[string]int{}
	for _, rw := range rows {
		if rw.msg.Key == "" {
			owners = append(owners, []row{rw})
			continue
		}
		i, ok := index[rw.msg.Key]
		if !ok {
			i = len(owners)
			index[rw.msg.Key] = i
			owners = append(owners, nil)
		}
		owners[i] = append(owners[i], rw)
	}
	return owners
}

func messages(rows []row) []*consumer.Message {
	msgs := make([]*consumer.Message, len(rows))
	for i, rw := range rows {
		msgs[i] = rw.msg
	}
	return msgs
}

func seqs(rows []row) []int64 {
	s := make([]int64, len(rows))
	for i, rw := range rows {
		s[i] = rw.seq
	}
	return s
}

func countRows(owners [][]row) int {
	n := 0
	for _, rows := range owners {
		n += len(rows)
	}
	return n
}
