package audittrail

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Backfill loads an export of past permission changes (one JSON object per
// line) straight into the audit table. It is run by hand from the ops
// command, never by the consumer; rows already present are skipped.
func Backfill(ctx context.Context, pool *pgxpool.Pool, export io.Reader) (int, error) {
	dec := json.NewDecoder(export)
	n := 0
	for {
		var e permissionChanged
		err := dec.Decode(&e)
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, fmt.Errorf("audittrail: backfill line %d: %w", n+1, err)
		}
		if err := insertEvent(ctx, pool, e); err != nil {
			return n, err
		}
		n++
	}
}
