// Package indexer keeps the product search index up to date.
package indexer

import (
	"context"

	"heldout3/indexer/gen/searchpb"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
	"google.golang.org/grpc"
)

// Run consumes product changes until ctx is done. search is the connection
// to the search service.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker, search *grpc.ClientConn) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "catalog.product-changed", "indexer")
	if err != nil {
		return err
	}
	p := &productIndexer{index: searchpb.NewIndexClient(search)}
	c, err := consumer.New(src, postgres.HandlerFunc(p.onProductChanged), consumer.Config{Name: "indexer"},
		middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
