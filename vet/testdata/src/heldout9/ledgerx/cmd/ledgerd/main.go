// Command ledgerd runs the ledger's consumers.
package main

import (
	"context"
	"os"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"

	"heldout9/ledgerx/internal/consumers"
)

func main() {
	ctx := context.Background()
	var pool *pgxpool.Pool
	st, _ := postgres.New(pool)
	broker, err := adapters.Open(ctx, os.Getenv("BROKER_URL"))
	if err != nil {
		os.Exit(1)
	}
	p := consumers.NewPostings(pool)
	apply := postgres.HandlerFunc(p.Apply)
	reverse := postgres.HandlerFunc(p.Reverse)
	idem := middleware.Idempotency(st)

	src1, _ := broker.Source(ctx, "postings", "ledger-apply")
	c1, err := consumer.New(src1, apply, consumer.Config{Name: "ledger-apply", Concurrency: 8}, idem)
	if err != nil {
		os.Exit(1)
	}
	src2, _ := broker.Source(ctx, "reversals", "ledger-reverse")
	c2, err := consumer.New(src2, reverse, consumer.Config{Name: "ledger-reverse"}, idem)
	if err != nil {
		os.Exit(1)
	}
	go c2.Run(ctx)
	_ = c1.Run(ctx)
}
