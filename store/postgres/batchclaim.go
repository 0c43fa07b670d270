package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// claim begins the batch's transaction and claims its live requests. It
// returns the claims it inserted (the others were committed before, or appear
// twice in the batch) and the requests still live.
//
// The claims are normally inserted by one statement, in the round trip of
// BEGIN. When the database rejects that statement with a data error (SQLSTATE
// class 22: a message ID that is not valid UTF-8 or holds a NUL byte), one
// value spoils the statement for all: the batch begins again and claims each
// request in a savepoint of its own (claimEach). A request whose claim the
// database rejects is answered with that error, a plain retryable one (the
// message's failure, never an outage), and leaves the batch; the others go on.
func (b *batcher) claim(batch []*request, live []int, results []result) (pgx.Tx, map[claimKey]bool, []int, error) {
	ctx, cancel := b.opContext()
	tx, claimed, err := b.beginClaimAll(ctx, batch, live)
	cancel()
	if err == nil || !isDataError(err) {
		return tx, claimed, live, err
	}
	b.s.cfg.Logger.Warn("postgres store: the database rejects a message of the batch; claiming one by one", "error", err, "size", len(live))
	return b.claimEach(batch, live, results)
}

// beginClaimAll begins the batch's transaction and inserts the claims of the
// live requests, in one round trip.
func (b *batcher) beginClaimAll(ctx context.Context, batch []*request, live []int) (pgx.Tx, map[claimKey]bool, error) {
	consumers := make([]string, len(live))
	ids := make([]string, len(live))
	for n, i := range live {
		consumers[n], ids[n] = batch[i].consumerName, batch[i].messageID
	}
	var pb pgx.Batch
	pb.BeginTx(pgx.TxOptions{})
	pb.Queue(b.s.bulkClaimSQL, consumers, ids)
	br := b.s.pool.SendBatch(ctx, &pb)
	tx := br.Tx()
	claimed := make(map[claimKey]bool, len(live))
	_, err := br.Exec()
	if err == nil {
		var rows pgx.Rows
		if rows, err = br.Query(); err == nil {
			var k claimKey
			_, err = pgx.ForEachRow(rows, []any{&k.consumerName, &k.messageID}, func() error {
				claimed[k] = true
				return nil
			})
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = tx.Rollback(ctx)
		return nil, nil, err
	}
	return tx, claimed, nil
}

// claimEach begins the batch's transaction and claims each live request in a
// savepoint of its own, each statement bounded by Config.BatchTimeout. A
// request whose claim fails with a data error gets that error in results and
// is left out of the live requests it returns. Any other failure ends the
// transaction and is returned.
func (b *batcher) claimEach(batch []*request, live []int, results []result) (pgx.Tx, map[claimKey]bool, []int, error) {
	ctx, cancel := b.opContext()
	tx, err := b.s.pool.Begin(ctx)
	cancel()
	if err != nil {
		return nil, nil, nil, err
	}
	claimed := make(map[claimKey]bool, len(live))
	kept := make([]int, 0, len(live))
	for _, i := range live {
		r := batch[i]
		inserted, rejected, err := b.claimOne(tx, r.consumerName, r.messageID)
		switch {
		case err != nil:
			ctx, cancel := b.opContext()
			_ = tx.Rollback(ctx)
			cancel()
			return nil, nil, nil, err
		case rejected != nil:
			results[i].err = fmt.Errorf("postgres store: claim: the database rejects this message: %w", rejected)
			continue
		case inserted:
			claimed[claimKey{r.consumerName, r.messageID}] = true
		}
		kept = append(kept, i)
	}
	return tx, claimed, kept, nil
}

// claimOne inserts one claim inside a savepoint of tx. It reports whether the
// row was inserted; a data error is rolled back to the savepoint and returned
// as rejected, leaving tx usable.
func (b *batcher) claimOne(tx pgx.Tx, consumerName, messageID string) (inserted bool, rejected, err error) {
	ctx, cancel := b.opContext()
	defer cancel()
	sp, err := tx.Begin(ctx)
	if err != nil {
		return false, nil, err
	}
	tag, err := sp.Exec(ctx, b.s.claimSQL, consumerName, messageID)
	if err != nil {
		if !isDataError(err) {
			return false, nil, err
		}
		if rerr := sp.Rollback(ctx); rerr != nil {
			return false, nil, rerr
		}
		return false, err, nil
	}
	return tag.RowsAffected() == 1, nil, sp.Commit(ctx)
}
