package geofence

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
)

type fenceCrossed struct {
	AssetID string    `json:"asset_id"`
	FenceID string    `json:"fence_id"`
	Enter   bool      `json:"enter"`
	At      time.Time `json:"at"`
}

// crossingHandler records fence entries and exits, and keeps the open visit
// per asset and fence.
type crossingHandler struct {
	pool *pgxpool.Pool
}

func (h *crossingHandler) Handle(ctx context.Context, msg *consumer.Message) error {
	var c fenceCrossed
	if err := json.Unmarshal(msg.Body, &c); err != nil {
		return consumer.Permanent(err)
	}
	tx, err := h.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `INSERT INTO crossings (asset_id, fence_id, enter, at) VALUES ($1, $2, $3, $4)`,
		c.AssetID, c.FenceID, c.Enter, c.At); err != nil {
		return fmt.Errorf("geofence: crossing: %w", err)
	}
	if c.Enter {
		_, err = tx.Exec(ctx, `INSERT INTO visits (asset_id, fence_id, entered_at) VALUES ($1, $2, $3)`, c.AssetID, c.FenceID, c.At)
	} else {
		_, err = tx.Exec(ctx, `UPDATE visits SET left_at = $3 WHERE asset_id = $1 AND fence_id = $2 AND left_at IS NULL`, c.AssetID, c.FenceID, c.At)
	}
	if err != nil {
		return fmt.Errorf("geofence: visit: %w", err)
	}
	return tx.Commit(ctx)
}
