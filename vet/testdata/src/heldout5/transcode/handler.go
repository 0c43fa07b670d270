package transcode

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

type uploaded struct {
	AssetID    string   `json:"asset_id"`
	Renditions []string `json:"renditions"`
}

// Handler records uploads.
type Handler struct {
	pool *Pool
}

// Handle records one upload and queues its renditions.
func (h *Handler) Handle(ctx context.Context, msg *consumer.Message) error {
	tx, ok := postgres.Tx(ctx)
	if !ok {
		return consumer.Permanent(context.Canceled)
	}
	var u uploaded
	if err := json.Unmarshal(msg.Body, &u); err != nil {
		return consumer.Permanent(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO assets (id, status) VALUES ($1, 'transcoding')`, u.AssetID); err != nil {
		return err
	}
	for _, r := range u.Renditions {
		h.pool.jobs <- job{ctx: ctx, assetID: u.AssetID, rendition: r} // want "handler context sent to worker goroutines"
	}
	return nil
}

// Run consumes upload events.
func Run(ctx context.Context, pg *pgxpool.Pool, src consumer.Source, workers *Pool) error {
	st, err := postgres.New(pg)
	if err != nil {
		return err
	}
	c, err := consumer.New(src, &Handler{pool: workers}, consumer.Config{Name: "transcode"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
