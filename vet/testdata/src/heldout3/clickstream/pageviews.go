package clickstream

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
)

type pageView struct {
	Path      string    `json:"path"`
	VisitorID string    `json:"visitor_id"`
	At        time.Time `json:"at"`
}

// pageViews keeps hourly unique-visitor sets per path. Each write is an
// upsert keyed by (path, hour, visitor), so applying a message twice leaves
// the same rows.
type pageViews struct {
	pool *pgxpool.Pool
}

func (p *pageViews) Handle(ctx context.Context, msg *consumer.Message) error {
	var v pageView
	if err := json.Unmarshal(msg.Body, &v); err != nil {
		return consumer.Permanent(err)
	}
	hour := v.At.UTC().Truncate(time.Hour)
	if _, err := p.pool.Exec(ctx,
		`INSERT INTO hourly_visitors (path, hour, visitor_id) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`,
		v.Path, hour, v.VisitorID); err != nil {
		return fmt.Errorf("clickstream: visitor: %w", err)
	}
	_, err := p.pool.Exec(ctx,
		`INSERT INTO last_view (visitor_id, path, at) VALUES ($1, $2, $3)
		 ON CONFLICT (visitor_id) DO UPDATE SET path = EXCLUDED.path, at = EXCLUDED.at WHERE last_view.at < EXCLUDED.at`,
		v.VisitorID, v.Path, v.At)
	return err
}
