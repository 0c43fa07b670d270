// Package adclicks keeps the near-real-time click counters shown on the
// advertiser dashboard. Billing counts clicks separately from the raw log, so
// these counters are approximate by design.
package adclicks

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/redis/go-redis/v9"
)

type click struct {
	CreativeID string    `json:"creative_id"`
	CampaignID string    `json:"campaign_id"`
	At         time.Time `json:"at"`
}

// Counter bumps the live counters.
type Counter struct {
	rdb  *redis.Client
	pool *pgxpool.Pool
}

// Handle counts one click.
func (c *Counter) Handle(ctx context.Context, msg *consumer.Message) error {
	var ev click
	if err := json.Unmarshal(msg.Body, &ev); err != nil {
		return consumer.Permanent(fmt.Errorf("decode click: %w", err))
	}
	minute := ev.At.Truncate(time.Minute).Unix()
	if err := c.rdb.Incr(ctx, fmt.Sprintf("clicks:%s:%d", ev.CreativeID, minute)).Err(); err != nil {
		return fmt.Errorf("live counter: %w", err)
	}
	_, err := c.pool.Exec(ctx,
		`UPDATE campaign_stats SET clicks_estimate = clicks_estimate + 1, last_click_at = greatest(last_click_at, $2) WHERE campaign_id = $1`,
		ev.CampaignID, ev.At)
	return err
}
