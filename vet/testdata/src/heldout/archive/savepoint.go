package archive

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// errSkip asks withSavepoint to roll the nested work back without failing
// the message.
var errSkip = errors.New("archive: skip")

// withSavepoint runs fn in a savepoint of tx: if fn fails, only its
// statements are undone and the outer transaction carries on.
func withSavepoint(ctx context.Context, tx pgx.Tx, fn func(sp pgx.Tx) error) (err error) {
	sp, err := tx.Begin(ctx)
	if err != nil {
		return fmt.Errorf("savepoint: %w", err)
	}
	defer func() {
		if err != nil {
			_ = sp.Rollback(ctx)
			if errors.Is(err, errSkip) {
				err = nil
			}
			return
		}
		err = sp.Commit(ctx)
	}()
	return fn(sp)
}
