// Package meadow turns hive-scale readings into the apiary's daily honey
// flow per hive.
package meadow

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

var errUnclaimed = errors.New("meadow: handler run outside the claim")

type hiveWeight struct {
	HiveID string    `json:"hive_id"`
	Grams  int64     `json:"grams"`
	At     time.Time `json:"at"`
}

// flow is the hive-scale handler.
func flow(ctx context.Context, msg *consumer.Message) error {
	tx, ok := postgres.Tx(ctx)
	if !ok {
		return errUnclaimed
	}
	var w hiveWeight
	if err := json.Unmarshal(msg.Body, &w); err != nil {
		return consumer.Permanent(err)
	}
	day := w.At.UTC().Truncate(24 * time.Hour)
	_, err := tx.Exec(ctx, `INSERT INTO hive_days (hive_id, day, first_grams, last_grams) VALUES ($1, $2, $3, $3)
		ON CONFLICT (hive_id, day) DO UPDATE SET last_grams = EXCLUDED.last_grams`, w.HiveID, day, w.Grams)
	return err
}
