// Package reviews stores product reviews and keeps average ratings.
package reviews

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

var errNoTx = errors.New("reviews: handler needs the claim transaction")

// Reviews stores reviews.
type Reviews struct {
	log *slog.Logger
}

type reviewPosted struct {
	ReviewID  string `json:"review_id"`
	ProductID string `json:"product_id"`
	Stars     int    `json:"stars"`
	Text      string `json:"text"`
}

// Handle stores one review.
func (r *Reviews) Handle(ctx context.Context, msg *consumer.Message) error {
	var ev reviewPosted
	if err := json.Unmarshal(msg.Body, &ev); err != nil {
		return consumer.Permanent(err)
	}
	tx, ok := postgres.Tx(ctx)
	if !ok {
		return errNoTx
	}
	if _, err := tx.Exec(ctx, `INSERT INTO reviews (id, product_id, stars, body) VALUES ($1, $2, $3, $4)`,
		ev.ReviewID, ev.ProductID, ev.Stars, ev.Text); err != nil {
		return err
	}
	go r.refreshRating(ctx, ev.ProductID) // want "claim's ctx (and its tx) used from a goroutine"
	return nil
}

// refreshRating recomputes the product's average in the same transaction.
func (r *Reviews) refreshRating(ctx context.Context, productID string) {
	tx, ok := postgres.Tx(ctx)
	if !ok {
		return
	}
	if _, err := tx.Exec(ctx,
		`UPDATE products SET rating = (SELECT avg(stars) FROM reviews WHERE product_id = $1) WHERE id = $1`, productID); err != nil {
		r.log.Warn("rating refresh", "product", productID, "err", err)
	}
}

// Run consumes reviews.posted.
func Run(ctx context.Context, broker adapters.Broker, pool *pgxpool.Pool, log *slog.Logger) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "reviews.posted", "reviews")
	if err != nil {
		return err
	}
	c, err := consumer.New(src, &Reviews{log: log}, consumer.Config{Name: "reviews"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
