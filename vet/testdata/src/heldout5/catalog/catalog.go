// Package catalog keeps the streaming catalogue's title metadata, behind the
// platform team's standard middleware.
package catalog

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"

	"example.com/platform"
)

type titleUpdated struct {
	TitleID string   `json:"title_id"`
	Name    string   `json:"name"`
	Genres  []string `json:"genres"`
}

// Updater applies title metadata.
type Updater struct{}

// Handle applies one update in the claim's transaction.
func (Updater) Handle(ctx context.Context, msg *consumer.Message) error {
	tx, ok := postgres.Tx(ctx)
	if !ok {
		return consumer.Permanent(context.DeadlineExceeded)
	}
	var t titleUpdated
	if err := json.Unmarshal(msg.Body, &t); err != nil {
		return consumer.Permanent(err)
	}
	_, err := tx.Exec(ctx, `UPDATE titles SET name = $2, genres = $3 WHERE id = $1`, t.TitleID, t.Name, t.Genres)
	return err
}

// Run consumes title updates on two topics.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	updates, err := broker.Source(ctx, "titles.updated", "catalog")
	if err != nil {
		return err
	}
	backfill, err := broker.Source(ctx, "titles.backfill", "catalog-backfill")
	if err != nil {
		return err
	}
	live, err := consumer.New(updates, Updater{}, consumer.Config{Name: "catalog"}, platform.Dedupe(st))
	if err != nil {
		return err
	}
	bf, err := consumer.New(backfill, platform.Wrap(Updater{}, st), consumer.Config{Name: "catalog-backfill"})
	if err != nil {
		return err
	}
	go bf.Run(ctx)
	return live.Run(ctx)
}
