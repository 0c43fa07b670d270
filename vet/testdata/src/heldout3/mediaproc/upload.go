package mediaproc

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
)

type assetUploaded struct {
	AssetID string `json:"asset_id"`
	OwnerID string `json:"owner_id"`
	Key     string `json:"key"`
	Width   int    `json:"width"`
	Height  int    `json:"height"`
}

type uploads struct {
	pipe *pipeline
}

func (u *uploads) onAssetUploaded(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var a assetUploaded
	if err := json.Unmarshal(msg.Body, &a); err != nil {
		return consumer.Permanent(err)
	}
	if _, err := tx.Exec(ctx,
		`INSERT INTO assets (id, owner_id, object_key, width, height) VALUES ($1, $2, $3, $4, $5)`,
		a.AssetID, a.OwnerID, a.Key, a.Width, a.Height); err != nil {
		return fmt.Errorf("mediaproc: store asset %s: %w", a.AssetID, err)
	}
	select {
	case u.pipe.jobs <- renditionJob{tx: tx, assetID: a.AssetID, width: a.Width, height: a.Height}: // want "the claim's transaction sent to the rendition workers, used after the handler returns"
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}
