package postgres

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store"
)

var _ store.BatchStore = (*Store)(nil)

// ProcessBatch implements store.BatchStore, for consumer.BatchHandler
// chains: in one transaction it claims every ID of ids with one statement,
//
//	BEGIN
//	INSERT INTO <schema>.processed_messages (consumer, message_id)
//	    SELECT $1, unnest($2::text[]) ON CONFLICT DO NOTHING RETURNING message_id   -- same round trip
//	fn(ctx, fresh)   -- the handler's set-based statements, on Tx(ctx)
//	COMMIT           -- or ROLLBACK when fn fails: no claim and no effect persists
//
// and runs fn with the positions of the IDs claimed now (those claimed and
// committed before are duplicates; so are later positions of an ID the batch
// repeats). The IDs are sent sorted and without repeats, so two batches
// claiming overlapping IDs take their row locks in the same order: the
// second waits for the first to end, then sees its claims, and neither can
// deadlock on the claims. ProcessBatch does not use batch mode's savepoints
// (Config.BatchSize): it runs on its own pooled connection whatever the mode.
//
// Errors follow Process's rule (see the package doc): failures of the
// store's own statements are wrapped with consumer.UnavailableFrom, or
// consumer.DownFrom when no connection could be opened; fn's error is
// returned unchanged (a consumer.BatchError included) unless it is a
// connection-class error or the transaction's connection is gone; a data
// error the claim raises for one ID (SQLSTATE class 22) fails the whole
// batch with a plain, retryable error, which the runtime bisects down to
// the message that causes it. An empty consumer name is a consumer.Permanent
// error; an empty or over-long ID is named in a consumer.BatchError, as
// permanent, before any SQL runs.
func (s *Store) ProcessBatch(ctx context.Context, consumerName string, ids []string, fn func(ctx context.Context, fresh []int) error) ([]int, error) {
	if consumerName == "" {
		return nil, consumer.Permanent(checkKey(consumerName, "-"))
	}
	var bad map[int]error
	for i, id := range ids {
		if err := checkKey(consumerName, id); err != nil {
			if bad == nil {
				bad = map[int]error{}
			}
			bad[i] = consumer.Permanent(err)
		}
	}
	if bad != nil {
		return nil, consumer.BatchError{Failed: bad}
	}
	if s.closed.Load() {
		return nil, consumer.UnavailableFrom(ErrClosed, s)
	}
	if len(ids) == 0 {
		return nil, nil
	}
	sorted := slices.Clone(ids)
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)

	tx, claimed, err := s.beginClaimBatch(ctx, consumerName, sorted)
	if err != nil {
		return nil, s.storeError("begin and claim batch", err)
	}
	done := false
	defer func() {
		if !done { // fn panicked: release the connection, then let the panic go on
			_ = tx.Rollback(context.WithoutCancel(ctx))
		}
	}()
	fresh := make([]int, 0, len(claimed))
	for i, id := range ids {
		if _, ok := claimed[id]; ok {
			delete(claimed, id) // a later position of id is a repeat
			fresh = append(fresh, i)
		}
	}
	if len(fresh) == 0 {
		done = true
		if err := tx.Commit(ctx); err != nil {
			return nil, s.unavailable("commit duplicate batch", err)
		}
		return nil, nil
	}
	ferr := fn(withTx(ctx, handlerTx{tx}), fresh)
	done = true
	if err := s.settleTx(ctx, tx, ferr); err != nil {
		return nil, err
	}
	return fresh, nil
}

// beginClaimBatch begins a transaction and claims ids (sorted, without
// repeats) for consumerName, in one round trip. It returns the IDs claimed
// now. On error the transaction is rolled back and its connection released.
func (s *Store) beginClaimBatch(ctx context.Context, consumerName string, ids []string) (pgx.Tx, map[string]struct{}, error) {
	var pb pgx.Batch
	pb.BeginTx(pgx.TxOptions{})
	pb.Queue(s.batchClaimSQL, consumerName, ids)
	br := s.pool.SendBatch(ctx, &pb)
	tx := br.Tx()
	claimed := make(map[string]struct{}, len(ids))
	_, err := br.Exec()
	if err == nil {
		var rows pgx.Rows
		if rows, err = br.Query(); err == nil {
			var id string
			_, err = pgx.ForEachRow(rows, []any{&id}, func() error {
				claimed[id] = struct{}{}
				return nil
			})
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = tx.Rollback(context.WithoutCancel(ctx))
		return nil, nil, fmt.Errorf("claiming %d messages: %w", len(ids), err)
	}
	return tx, claimed, nil
}

// BatchHandlerFunc adapts f, a batch handler that takes the store's
// transaction explicitly, to consumer.BatchHandler. Use it inside a chain
// that has the idempotency middleware with a postgres Store: f then gets only
// the messages not processed before, and its statements on tx commit with
// their claims, or not at all. Return a consumer.BatchError to name the
// messages that failed: the others run again in a new transaction. Without a
// transaction in the context the handler returns ErrNoTx wrapped with
// consumer.Unavailable, as HandlerFunc does.
func BatchHandlerFunc(f func(ctx context.Context, tx pgx.Tx, msgs []*consumer.Message) error) consumer.BatchHandler {
	return consumer.BatchHandlerFunc(func(ctx context.Context, msgs []*consumer.Message) error {
		tx, ok := Tx(ctx)
		if !ok {
			return consumer.Unavailable(ErrNoTx)
		}
		return f(ctx, tx, msgs)
	})
}
