package kycreview

import (
	"context"
	"net/http"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"

	"heldout4/kycreview/customers"
)

// Run serves the back office and applies reviews until ctx ends.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker, mux *http.ServeMux) error {
	repo := customers.New(pool)
	mux.Handle("GET /customers/{id}/risk", riskHandler(repo))

	src, err := broker.Source(ctx, "compliance.kyc-review-completed", "kyc-review")
	if err != nil {
		return err
	}
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	h := &Reviews{customers: repo}
	c, err := consumer.New(src, postgres.HandlerFunc(h.apply), consumer.Config{Name: "kyc-review"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
