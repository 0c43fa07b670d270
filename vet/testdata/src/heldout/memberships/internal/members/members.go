// Package members is the memberships data layer, always used inside a
// transaction.
package members

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// Tx wraps the caller's transaction.
type Tx struct {
	tx pgx.Tx
}

// In returns the data layer over tx.
func In(tx pgx.Tx) Tx { return Tx{tx: tx} }

// Join adds userID to groupID.
func (t Tx) Join(ctx context.Context, groupID, userID string, at time.Time) error {
	_, err := t.tx.Exec(ctx, `INSERT INTO members (group_id, user_id, joined_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`, groupID, userID, at)
	return err
}

// Leave removes userID from groupID.
func (t Tx) Leave(ctx context.Context, groupID, userID string) error {
	_, err := t.tx.Exec(ctx, `DELETE FROM members WHERE group_id = $1 AND user_id = $2`, groupID, userID)
	return err
}

// Recount refreshes the group's member count.
func (t Tx) Recount(ctx context.Context, groupID string) error {
	_, err := t.tx.Exec(ctx, `UPDATE groups SET members = (SELECT count(*) FROM members WHERE group_id = $1) WHERE id = $1`, groupID)
	return err
}
