// Package ratings records product ratings.
package ratings

import (
	"context"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"

	"heldout2/ratings/store"
)

type rating struct {
	product string
	user    string
	stars   int
}

func (r rating) Insert() (string, []any) {
	return `INSERT INTO ratings (product, user_id, stars) VALUES ($1, $2, $3) ON CONFLICT (product, user_id) DO UPDATE SET stars = $3`,
		[]any{r.product, r.user, r.stars}
}

type recorder struct {
	reads store.Table[rating]
}

func (rc *recorder) record(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	stars, err := strconv.Atoi(string(msg.Body))
	if err != nil {
		return consumer.Permanent(err)
	}
	if stars < 1 || stars > 5 {
		return consumer.Permanent(fmt.Errorf("rating %d out of range", stars))
	}
	return store.On[rating](tx).Insert(ctx, rating{product: msg.Key, user: msg.Headers["user"], stars: stars})
}

// Average serves the product page, outside any handler.
func (rc *recorder) Average(ctx context.Context, product string) (pgx.Rows, error) {
	return rc.reads.Scan(ctx, `SELECT avg(stars) FROM ratings WHERE product = $1`, product)
}

// Run wires the ratings consumer.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	rc := &recorder{reads: store.On[rating](pool)}
	src, err := broker.Source(ctx, "ratings", "ratings")
	if err != nil {
		return err
	}
	c, err := consumer.New(src, postgres.HandlerFunc(rc.record), consumer.Config{Name: "ratings"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
