// Package documents files uploaded KYC documents.
package documents

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

// Run consumes uploads until ctx is done.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker, s3c *s3.Client) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "kyc.document-uploaded", "documents")
	if err != nil {
		return err
	}
	var mws []consumer.Middleware
	mws = append(mws, middleware.Logging(), middleware.Idempotency(st))
	c, err := consumer.New(src, &verifier{s3: s3c}, consumer.Config{Name: "documents"}, mws...)
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
