package replayplan

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/internal/failpoint"
)

// MaxAuditIDs is the most message IDs Reprocess hands its audit row.
const MaxAuditIDs = 10_000

// Recorder writes the audit rows of a Reprocess: the oncely replay command
// and the console each write their console_audit rows their own way.
type Recorder interface {
	// Deleted writes, within tx (the one deleting the claims), the row
	// recording the deletion and returns its ID: deleted claims, ids the
	// first MaxAuditIDs message IDs of the covered records, notRecorded
	// how many covered records ids leaves out.
	Deleted(ctx context.Context, tx pgx.Tx, deleted int64, ids []string, notRecorded int) (int64, error)
	// Committed records the outcome of the offset commit that followed
	// row auditID (cerr nil: committed), in a transaction of its own.
	Committed(ctx context.Context, auditID int64, cerr error) error
}

// ErrNothingChanged wraps a Reprocess failure before its claims'
// transaction committed: no claim was deleted, no offset moved.
var ErrNothingChanged = errors.New("nothing was changed")

// NotCommittedError is a Reprocess whose claims were deleted (with the
// audit row AuditID) but whose offsets were not committed: the consumer
// does not read the covered records again until the same replay is run
// again, which finishes it.
type NotCommittedError struct {
	Deleted, AuditID int64
	Err              error
}

func (e *NotCommittedError) Error() string {
	return fmt.Sprintf("the %d claims were deleted (audit row %d) but the offsets were not committed, so the consumer does not read those records again yet; run the same replay again to finish: %v", e.Deleted, e.AuditID, e.Err)
}

func (e *NotCommittedError) Unwrap() error { return e.Err }

// Reprocess deletes the claims of plan's consumer for exactly the records
// plan covers (their message IDs, ChunkSize a statement) in one
// transaction with the audit row rec writes, then commits plan's offsets
// and has rec record the outcome. It returns the claims deleted and the
// audit row's ID. A failure before the transaction commits changes
// nothing (ErrNothingChanged); a failure of the offset commit after it is
// a *NotCommittedError. progress is as EachIDChunk's.
func Reprocess(ctx context.Context, r adapters.Replayer, plan adapters.ReplayPlan, pool *pgxpool.Pool, schema string, rec Recorder, progress func(n int)) (deleted, auditID int64, err error) {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("%w: %w", ErrNothingChanged, err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	del := "DELETE FROM " + ClaimsTable(schema) + countQuery
	var ids []string
	err = EachIDChunk(ctx, r, plan, progress, func(_ int32, chunk []string) error {
		tag, err := tx.Exec(ctx, del, plan.Consumer, chunk)
		if err != nil {
			return fmt.Errorf("deleting claims: %w", err)
		}
		deleted += tag.RowsAffected()
		if room := MaxAuditIDs - len(ids); room > 0 {
			ids = append(ids, chunk[:min(room, len(chunk))]...)
		}
		return nil
	})
	if err == nil {
		auditID, err = rec.Deleted(ctx, tx, deleted, ids, max(int(plan.Covered())-len(ids), 0))
	}
	if err == nil {
		err = tx.Commit(ctx)
	}
	if err != nil {
		return 0, 0, fmt.Errorf("%w: %w", ErrNothingChanged, err)
	}
	failpoint.Hit("replay-planned")
	cerr := r.CommitReplay(ctx, plan)
	if cerr == nil {
		failpoint.Hit("replay-committed")
	}
	if err := rec.Committed(context.WithoutCancel(ctx), auditID, cerr); err != nil && cerr == nil {
		cerr = err
	}
	if cerr != nil {
		return deleted, auditID, &NotCommittedError{Deleted: deleted, AuditID: auditID, Err: cerr}
	}
	return deleted, auditID, nil
}
