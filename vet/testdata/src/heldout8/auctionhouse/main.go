package auctionhouse

import (
	"context"
	"os"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

// Main consumes bids.
func Main(ctx context.Context, pool *pgxpool.Pool) error {
	book := &BidBook{}
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	b, err := adapters.Open(ctx, os.Getenv("BROKER_URL"))
	if err != nil {
		return err
	}
	src, err := b.Source(ctx, "auction.bids", "bid-book")
	if err != nil {
		return err
	}
	c, err := consumer.New(src, postgres.BatchHandlerFunc(book.HandleBatch), consumer.Config{Name: "bid-book"},
		middleware.Logging(), middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
