package audittrail

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
)

// recordBatch stores a batch of permission changes in the claim's
// transaction.
func recordBatch(ctx context.Context, tx pgx.Tx, msgs []*consumer.Message) error {
	var q querier = tx
	for _, m := range msgs {
		var e permissionChanged
		if err := json.Unmarshal(m.Body, &e); err != nil {
			return consumer.Permanent(err)
		}
		if err := insertEvent(ctx, q, e); err != nil {
			return err
		}
	}
	return nil
}
