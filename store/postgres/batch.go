package postgres

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/oncely/oncely/consumer"
)

// Batch-mode statements. One savepoint name is reused: each message releases
// the previous message's savepoint and opens its own in the same round trip
// as its claim.
const (
	savepointSQL   = "SAVEPOINT oncely_msg"
	releaseSQL     = "RELEASE SAVEPOINT oncely_msg"
	rollbackToSQL  = "ROLLBACK TO SAVEPOINT oncely_msg"
	txStatusFailed = 'E'
)

// errAborted is returned when a handler returned nil although a statement in
// its transaction failed (the error was swallowed): its work cannot commit.
// It is a plain, retryable error.
var errAborted = errors.New("postgres store: the handler returned nil but a statement in its transaction failed, so its work was rolled back")

type request struct {
	ctx          context.Context
	consumerName string
	messageID    string
	fn           func(context.Context) error
	done         chan result
}

type result struct {
	duplicate bool
	err       error
}

// batcher runs queued Process calls in shared transactions on one goroutine.
type batcher struct {
	s    *Store
	reqs chan *request

	mu     sync.RWMutex // held for reading while sending on reqs
	closed bool

	queued atomic.Int64 // requests accepted so far, for tests

	stop chan struct{}
	done chan struct{}
}

func newBatcher(s *Store) *batcher {
	b := &batcher{
		s:    s,
		reqs: make(chan *request, s.cfg.BatchSize),
		stop: make(chan struct{}),
		done: make(chan struct{}),
	}
	go b.loop()
	return b
}

func (b *batcher) process(ctx context.Context, consumerName, messageID string, fn func(context.Context) error) (bool, error) {
	r := &request{ctx: ctx, consumerName: consumerName, messageID: messageID, fn: fn, done: make(chan result, 1)}
	b.mu.RLock()
	if b.closed {
		b.mu.RUnlock()
		return false, consumer.Unavailable(ErrClosed)
	}
	select {
	case b.reqs <- r:
		b.queued.Add(1)
	case <-ctx.Done():
		b.mu.RUnlock()
		return false, ctx.Err()
	}
	b.mu.RUnlock()
	// Wait even if ctx ends: fn must not run after Process returns. A queued
	// request whose ctx is done is answered without running fn.
	res := <-r.done
	return res.duplicate, res.err
}

// close refuses new requests, lets the loop run every queued one, and waits
// for it until ctx is done.
func (b *batcher) close(ctx context.Context) error {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	close(b.stop)
	select {
	case <-b.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("postgres store: close: batches still running: %w", ctx.Err())
	}
}

func (b *batcher) loop() {
	defer close(b.done)
	size := b.s.cfg.BatchSize
	linger := time.NewTimer(time.Hour)
	linger.Stop()
	for {
		var batch []*request
		select {
		case r := <-b.reqs:
			batch = append(batch, r)
		case <-b.stop:
			b.drain()
			return
		}
		linger.Reset(b.s.cfg.BatchLinger)
	collect:
		for len(batch) < size {
			select {
			case r := <-b.reqs:
				batch = append(batch, r)
			case <-linger.C:
				break collect
			case <-b.stop:
				break collect
			}
		}
		linger.Stop()
		b.run(batch)
	}
}

// drain runs what is queued after close; no request can be added any more.
func (b *batcher) drain() {
	for {
		var batch []*request
	fill:
		for len(batch) < b.s.cfg.BatchSize {
			select {
			case r := <-b.reqs:
				batch = append(batch, r)
			default:
				break fill
			}
		}
		if len(batch) == 0 {
			return
		}
		b.run(batch)
	}
}

// run processes one batch in one transaction and answers every request after
// the COMMIT (or the failure).
func (b *batcher) run(batch []*request) {
	results := make([]result, len(batch))
	defer func() {
		for i, r := range batch {
			r.done <- results[i]
		}
	}()
	live := 0
	for i, r := range batch {
		if err := r.ctx.Err(); err != nil {
			results[i].err = err
			continue
		}
		live++
	}
	if live == 0 {
		return
	}

	ctx, cancel := context.WithTimeout(context.Background(), b.s.cfg.BatchTimeout)
	defer cancel()
	failAll := func(err error) {
		for i := range results {
			if results[i].err == nil || results[i].duplicate {
				results[i] = result{err: err}
			}
		}
	}

	tx, err := b.s.pool.Begin(ctx)
	if err != nil {
		failAll(unavailable("begin batch", err))
		return
	}
	committed := false
	defer func() {
		if !committed {
			_ = tx.Rollback(ctx)
		}
	}()
	pending := make([]bool, len(batch)) // run and not failed: waits for the COMMIT
	open := false                       // a savepoint is open and must be released first
	for i, r := range batch {
		if results[i].err != nil {
			continue
		}
		if err := r.ctx.Err(); err != nil {
			results[i].err = err
			continue
		}
		dup, inSavepoint, err := b.claim(ctx, tx, r, open)
		open = true
		if err != nil {
			// Only a failed claim inside this message's savepoint can be
			// undone alone; anything else takes the batch down.
			if !inSavepoint || tx.Conn().IsClosed() || !b.rollbackTo(ctx, tx) {
				b.s.cfg.Logger.Warn("postgres store: batch aborted", "error", err, "size", len(batch))
				failAll(unavailable("batch aborted", err))
				return
			}
			results[i].err = unavailable("claim", err)
			continue
		}
		if dup {
			results[i].duplicate = true
			pending[i] = true
			continue
		}
		ferr := call(withTx(r.ctx, tx), r.fn)
		if ferr == nil && tx.Conn().PgConn().TxStatus() == txStatusFailed {
			ferr = errAborted
		}
		if ferr == nil {
			pending[i] = true
			continue
		}
		lost := tx.Conn().IsClosed()
		if lost || !b.rollbackTo(ctx, tx) {
			b.s.cfg.Logger.Warn("postgres store: batch aborted", "error", ferr, "size", len(batch))
			failAll(unavailable("batch aborted after a handler failed", ferr))
			results[i].err = handlerError(ferr, lost)
			return
		}
		results[i].err = handlerError(ferr, false)
	}
	err = tx.Commit(ctx)
	committed = true
	if err != nil {
		werr := unavailable("commit batch", err)
		for i := range batch {
			if pending[i] {
				results[i] = result{err: werr}
			}
		}
	}
}

// claim releases the previous message's savepoint (when open), opens this
// message's and inserts its claim, in one round trip. It reports whether the
// claim already existed, and whether this message's savepoint was open when
// an error happened (so rolling back to it undoes this message only).
func (b *batcher) claim(ctx context.Context, tx pgx.Tx, r *request, open bool) (duplicate, inSavepoint bool, err error) {
	var pb pgx.Batch
	if open {
		pb.Queue(releaseSQL)
	}
	pb.Queue(savepointSQL)
	pb.Queue(b.s.claimSQL, r.consumerName, r.messageID)
	br := tx.SendBatch(ctx, &pb)
	for range pb.Len() - 1 {
		if _, err := br.Exec(); err != nil {
			_ = br.Close()
			return false, false, err
		}
	}
	tag, err := br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return false, true, err
	}
	return tag.RowsAffected() == 0, true, nil
}

// rollbackTo undoes the current message's work, keeping the batch's; it
// reports whether the transaction is usable afterwards.
func (b *batcher) rollbackTo(ctx context.Context, tx pgx.Tx) bool {
	_, err := tx.Exec(ctx, rollbackToSQL)
	return err == nil
}

// call runs fn, turning a panic into a *consumer.PanicError: the batch
// goroutine must survive a handler's panic.
func call(ctx context.Context, fn func(context.Context) error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &consumer.PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	return fn(ctx)
}
