package gamingrewards

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

func loadCatalogue(ctx context.Context, pool *pgxpool.Pool) (map[string]reward, error) {
	var quests, items []string
	var qtys, gems []int
	err := pool.QueryRow(ctx, `SELECT array_agg(quest_id), array_agg(item_id), array_agg(qty), array_agg(gems) FROM quest_rewards`).
		Scan(&quests, &items, &qtys, &gems)
	if err != nil {
		return nil, err
	}
	cat := make(map[string]reward, len(quests))
	for i, q := range quests {
		cat[q] = reward{ItemID: items[i], Qty: qtys[i], Gems: gems[i]}
	}
	return cat, nil
}

// Run grants rewards until ctx ends.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker) error {
	cat, err := loadCatalogue(ctx, pool)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "game.quest-completed", "quest-rewards")
	if err != nil {
		return err
	}
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	g := &Granter{catalogue: cat}
	c, err := consumer.New(src, postgres.BatchHandlerFunc(g.grant), consumer.Config{Name: "quest-rewards", Concurrency: 4}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
