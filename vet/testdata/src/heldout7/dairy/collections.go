// Package dairy books milk collections from farm tanks and grades them.
package dairy

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
	"github.com/twmb/franz-go/pkg/kgo"

	"heldout7/dairy/events"
	"heldout7/platform/kit"
)

type collection struct {
	Farm      string  `json:"farm"`
	Tank      string  `json:"tank"`
	Litres    float64 `json:"litres"`
	FatPct    float64 `json:"fat_pct"`
	SomaticKs int     `json:"somatic_k"`
}

type graded struct {
	Farm  string `json:"farm"`
	Tank  string `json:"tank"`
	Grade string `json:"grade"`
}

func grade(c collection) string {
	switch {
	case c.SomaticKs > 400:
		return "reject"
	case c.FatPct >= 4.0:
		return "A"
	default:
		return "B"
	}
}

func collectionHandler(emit *events.Emitter) kit.TxFunc[collection] {
	return func(ctx context.Context, tx pgx.Tx, c collection) error {
		g := grade(c)
		if _, err := tx.Exec(ctx, `INSERT INTO collections (farm, tank, litres, fat_pct, somatic_k, grade) VALUES ($1, $2, $3, $4, $5, $6)`,
			c.Farm, c.Tank, c.Litres, c.FatPct, c.SomaticKs, g); err != nil {
			return fmt.Errorf("collection %s/%s: %w", c.Farm, c.Tank, err)
		}
		if _, err := tx.Exec(ctx, `UPDATE farms SET litres_month = litres_month + $2 WHERE id = $1`, c.Farm, c.Litres); err != nil {
			return err
		}
		return emit.Emit(ctx, graded{Farm: c.Farm, Tank: c.Tank, Grade: g}) // want "outbox"
	}
}

// Run consumes tanker collections until ctx ends.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker, kafka *kgo.Client, log *slog.Logger) error {
	st, err := postgres.New(pool)
	if err != nil {
		return fmt.Errorf("dairy: %w", err)
	}
	src, err := broker.Source(ctx, "tanker.collections", "dairy-grading")
	if err != nil {
		return fmt.Errorf("dairy: %w", err)
	}
	h := postgres.HandlerFunc(kit.Typed(collectionHandler(events.NewEmitter(kafka, "milk.graded"))))
	c, err := consumer.New(src, h, consumer.Config{Name: "dairy-grading", Concurrency: 4}, kit.Standard(st, log)...)
	if err != nil {
		return fmt.Errorf("dairy: %w", err)
	}
	return c.Run(ctx)
}
