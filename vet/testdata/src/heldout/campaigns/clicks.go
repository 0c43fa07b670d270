// Package campaigns bills ad clicks against campaign budgets.
package campaigns

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"

	"heldout/campaigns/budgets"
)

// Billing bills clicks.
type Billing struct {
	budgets *budgets.Store
	cpc     map[string]int64
}

type adClicked struct {
	ClickID    string `json:"click_id"`
	CampaignID string `json:"campaign_id"`
	Day        string `json:"day"`
	Placement  string `json:"placement"`
}

func (b *Billing) onClick(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var c adClicked
	if err := json.Unmarshal(msg.Body, &c); err != nil {
		return consumer.Permanent(err)
	}
	price, ok := b.cpc[c.Placement]
	if !ok {
		return consumer.Permanent(fmt.Errorf("unknown placement %q", c.Placement))
	}
	if _, err := tx.Exec(ctx, `INSERT INTO clicks (id, campaign_id, cents) VALUES ($1, $2, $3)`, c.ClickID, c.CampaignID, price); err != nil {
		return err
	}
	return b.budgets.Spend(ctx, c.CampaignID, c.Day, price) // want "spend written through *sql.DB, outside the claim's transaction"
}

// Run consumes ads.clicks. Claims and clicks live in the pgx pool; budgets
// are still reached through database/sql.
func Run(ctx context.Context, broker adapters.Broker, pool *pgxpool.Pool, legacy *sql.DB) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "ads.clicks", "campaign-billing")
	if err != nil {
		return err
	}
	b := &Billing{budgets: budgets.NewStore(legacy), cpc: map[string]int64{"search": 40, "feed": 12}}
	c, err := consumer.New(src, postgres.HandlerFunc(b.onClick), consumer.Config{Name: "campaign-billing"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
