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
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/oncely/oncely/consumer"
)

// Batch-mode statements. One savepoint name is reused: before a handler's
// first statement the previous message's savepoint is released and this
// message's opened, in the same round trip as that statement (see batchTx).
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
	// alone: the batch ended without committing this request's work, and
	// its caller runs it again in a transaction of its own (runAlone).
	alone bool
}

type claimKey struct{ consumerName, messageID string }

// batcher runs queued Process calls in shared transactions on one goroutine.
//
// Per batch: BEGIN; one INSERT … SELECT unnest(…) ON CONFLICT DO NOTHING
// RETURNING claims every message at once; then, for each claimed message in
// arrival order, its handler runs inside its own savepoint; a failure rolls
// back to the savepoint and deletes the message's claim; COMMIT; then every
// caller gets its answer.
type batcher struct {
	s    *Store
	reqs chan *request

	mu     sync.RWMutex // held for reading while sending on reqs
	closed bool

	queued atomic.Int64 // requests accepted so far, for tests

	// reruns counts requests handed back to run alone that have not
	// returned yet; close waits for them. Add runs on the loop or the
	// committer, before they end, so before close waits.
	reruns sync.WaitGroup

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
		return false, consumer.UnavailableFrom(ErrClosed, b.s)
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
	if res.alone {
		return b.runAlone(r)
	}
	return res.duplicate, res.err
}

// close refuses new requests, lets the loop run every queued one, and waits
// for it and for the requests run again alone until ctx is done.
func (b *batcher) close(ctx context.Context) error {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	close(b.stop)
	select {
	case <-b.done:
	case <-ctx.Done():
		return fmt.Errorf("postgres store: close: batches still running: %w", ctx.Err())
	}
	reran := make(chan struct{})
	go func() {
		b.reruns.Wait()
		close(reran)
	}()
	select {
	case <-reran:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("postgres store: close: messages still running alone: %w", ctx.Err())
	}
}

func (b *batcher) loop() {
	// One batch runs its statements on this goroutine while the previous one
	// commits on the committer: the commit's fsync overlaps the next batch's
	// work. The next batch may wait for row locks the committing one holds,
	// never the other way round, so the overlap adds no deadlock. Neither
	// goroutine runs a handler outside a batch: a batch that does not commit
	// hands its messages back to their callers (commitJob.handBack).
	commits := make(chan *commitJob)
	committed := make(chan struct{})
	go func() {
		defer close(committed)
		for j := range commits {
			j.commit()
		}
	}()
	defer func() {
		close(commits)
		<-committed
		close(b.done)
	}()
	run := func(batch []*request) {
		if j := b.run(batch); j != nil {
			commits <- j
		}
	}
	size := b.s.cfg.BatchSize
	linger := time.NewTimer(time.Hour)
	linger.Stop()
	for {
		var batch []*request
		select {
		case r := <-b.reqs:
			batch = append(batch, r)
		case <-b.stop:
			b.drain(run)
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
		run(batch)
	}
}

// drain runs what is queued after close; no request can be added any more.
func (b *batcher) drain(run func([]*request)) {
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
		run(batch)
	}
}

// commitJob is a batch whose handlers have run, waiting for its COMMIT. A
// request with err == nil is either a duplicate or a handler that succeeded:
// both wait for the COMMIT.
type commitJob struct {
	b       *batcher
	batch   []*request
	results []result
	tx      pgx.Tx
}

// fail gives every request not yet failed op's error, wrapped with
// consumer.UnavailableFrom (the runtime probes the database): used by lose
// when the batch's transaction is gone and the database does not answer.
func (j *commitJob) fail(op string, err error) {
	j.b.s.cfg.Logger.Warn("postgres store: batch aborted", "op", op, "error", err, "size", len(j.batch))
	werr := j.b.s.unavailable(op, err)
	for i := range j.results {
		if j.results[i].err == nil {
			j.results[i] = result{err: werr}
		}
	}
}

// finish rolls back (when the transaction is still open) and answers every
// request.
func (j *commitJob) finish() {
	if j.tx != nil {
		ctx, cancel := j.b.opContext()
		_ = j.tx.Rollback(ctx)
		cancel()
	}
	for i, r := range j.batch {
		r.done <- j.results[i]
	}
}

// commit commits the batch and answers every request.
func (j *commitJob) commit() {
	ctx, cancel := j.b.opContext()
	defer cancel()
	err := j.tx.Commit(ctx)
	j.tx = nil
	switch {
	case err == nil:
	case rejected(err):
		// A deferred constraint that one message's effects violate, a
		// serialization failure: nothing of the batch persisted, and
		// failing every message would charge all of them for one.
		j.b.s.cfg.Logger.Warn("postgres store: batch commit rejected; running its messages one by one", "error", err, "size", len(j.batch))
		j.handBack()
	default:
		j.lose("commit batch", err)
	}
	j.finish()
}

// rejected reports whether err is the server refusing a statement (a
// *pgconn.PgError outside the connection classes), as opposed to an outage.
func rejected(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && !IsConnectionError(err)
}

// run claims a batch and runs its handlers in one transaction. It returns the
// job that commits it, or nil when the batch failed and every request was
// answered.
func (b *batcher) run(batch []*request) *commitJob {
	j := &commitJob{b: b, batch: batch, results: make([]result, len(batch))}
	results := j.results
	var live []int
	for i, r := range batch {
		if err := r.ctx.Err(); err != nil {
			results[i].err = err
			continue
		}
		live = append(live, i)
	}
	if len(live) == 0 {
		j.finish()
		return nil
	}
	abort := func(op string, err error) *commitJob {
		j.lose(op, err)
		j.finish()
		return nil
	}

	tx, claimed, live, err := b.claim(batch, live, results)
	if err != nil {
		return abort("begin and claim batch", err)
	}
	j.tx = tx

	owner := make(map[claimKey]int, len(live)) // the request holding the batch's claim of a key
	btx := &batchTx{handlerTx: handlerTx{tx}}
	open := false // a savepoint named oncely_msg exists
	for _, i := range live {
		r := batch[i]
		k := claimKey{r.consumerName, r.messageID}
		if prev, ok := owner[k]; ok {
			if results[prev].err == nil { // an earlier copy in this batch succeeded
				results[i].duplicate = true
				continue
			}
			// The earlier copy failed and dropped its claim: claim again.
			ctx, cancel := b.opContext()
			tag, err := tx.Exec(ctx, b.s.claimSQL, r.consumerName, r.messageID)
			cancel()
			if err != nil {
				return abort("claim", err)
			}
			if tag.RowsAffected() == 0 {
				results[i].duplicate = true
				continue
			}
		} else if !claimed[k] {
			results[i].duplicate = true // committed by an earlier transaction
			continue
		}
		owner[k] = i

		// inSavepoint: this message's savepoint was opened, so rolling back
		// to oncely_msg undoes this message only. Until then the name
		// belongs to an earlier message that must not be touched.
		inSavepoint := false
		ferr := r.ctx.Err()
		if ferr == nil {
			btx.start(open)
			ferr = call(withTx(r.ctx, btx), r.fn)
			if btx.err != nil { // the savepoint itself failed: the batch is unusable
				if ferr != nil {
					results[i].err = b.s.handlerError(ferr, true)
				}
				return abort("savepoint", btx.err)
			}
			inSavepoint = btx.flushed
			open = open || inSavepoint
			if ferr == nil && tx.Conn().PgConn().TxStatus() == txStatusFailed {
				ferr = errAborted
			}
		}
		if ferr == nil {
			continue
		}
		lost := tx.Conn().IsClosed()
		if lost || b.undo(tx, inSavepoint, k) != nil {
			results[i].err = b.s.handlerError(ferr, lost)
			return abort("batch aborted after a handler failed", ferr)
		}
		results[i].err = b.s.handlerError(ferr, false)
	}
	return j
}

// opContext bounds one of the store's own statements of a batch by
// Config.BatchTimeout.
func (b *batcher) opContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), b.s.cfg.BatchTimeout)
}

// undo rolls back the current message's work (when its savepoint was opened)
// and deletes its claim, keeping the batch's other work. The two statements
// are not pipelined: in an aborted transaction the server refuses to prepare
// the DELETE until the ROLLBACK TO has run.
func (b *batcher) undo(tx pgx.Tx, inSavepoint bool, k claimKey) error {
	ctx, cancel := b.opContext()
	defer cancel()
	if inSavepoint {
		if _, err := tx.Exec(ctx, rollbackToSQL); err != nil {
			return err
		}
	}
	_, err := tx.Exec(ctx, b.s.deleteSQL, k.consumerName, k.messageID)
	return err
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
