package postgres

import (
	"context"

	"github.com/oncely/oncely/consumer"
)

// lose handles a batch whose transaction is gone before it committed: its
// connection failed, a savepoint or a rollback to one could not run, or
// COMMIT failed without the server rejecting it (its outcome is unknown). The
// transaction is rolled back if it is still open. Then the database is
// pinged: when it answers, only this batch's connection failed (a backend the
// server terminated, an idle-in-transaction timeout, one handler's error), so
// every request without an error yet runs again on its own, as in
// single-message mode (handBack) — batch-mates are not charged an attempt
// for another message's failure, and the claims decide what a COMMIT of
// unknown outcome did (a committed message comes back as a duplicate). When
// the database does not answer, they all fail with op's error wrapped with
// consumer.UnavailableFrom: an outage. The caller answers the requests.
func (j *commitJob) lose(op string, err error) {
	if j.tx != nil {
		ctx, cancel := j.b.opContext()
		_ = j.tx.Rollback(ctx)
		cancel()
		j.tx = nil
	}
	ctx, cancel := j.b.opContext()
	ctx, cancelProbe := context.WithTimeout(ctx, consumer.ProbeTimeoutDefault)
	perr := j.b.s.ping(ctx)
	cancelProbe()
	cancel()
	if perr != nil {
		j.fail(op, err)
		return
	}
	j.b.s.cfg.Logger.Warn("postgres store: batch lost its transaction while the database answers; running its messages one by one",
		"op", op, "error", err, "size", len(j.batch))
	j.handBack()
}

// handBack marks each request of the batch that has no error yet to be run
// again by its caller in its own transaction, as in single-message mode
// (batcher.runAlone), after the batch's transaction ended without
// committing. The batch's goroutines go on at once: the next batch may hold
// row locks the reruns need, and it commits on the committer. A request
// whose context is done gets its context's error.
func (j *commitJob) handBack() {
	for i, r := range j.batch {
		if j.results[i].err != nil {
			continue
		}
		if err := r.ctx.Err(); err != nil {
			j.results[i] = result{err: err}
			continue
		}
		j.b.reruns.Add(1)
		j.results[i] = result{alone: true}
	}
}

// runAlone runs r in a transaction of its own, as in single-message mode, on
// its caller's goroutine: never on the loop or the committer, where it
// could wait for a row lock that the next batch holds while that batch waits
// for the committer — a deadlock the server cannot see. A panic of r's
// handler is returned as a *consumer.PanicError, as in a batch.
func (b *batcher) runAlone(r *request) (bool, error) {
	defer b.reruns.Done()
	return b.s.processOne(r.ctx, r.consumerName, r.messageID, func(ctx context.Context) error {
		return call(ctx, r.fn)
	})
}
