package lottery

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"

	"heldout8/shared/obs"
)

// Service is the lottery ticket service.
type Service struct {
	Pool   *pgxpool.Pool
	S3     *s3.Client
	Bucket string
	Broker string
}

// Run consumes paid entries.
func (s Service) Run(ctx context.Context) error {
	issuer := &Issuer{blobs: s.S3, bucket: s.Bucket}
	st, err := postgres.New(s.Pool)
	if err != nil {
		return err
	}
	b, err := adapters.Open(ctx, s.Broker)
	if err != nil {
		return err
	}
	src, err := b.Source(ctx, "entries.paid", "ticket-issuer")
	if err != nil {
		return err
	}
	mws := []consumer.Middleware{obs.Tagged("lottery"), middleware.Idempotency(st)}
	c, err := consumer.New(src, postgres.BatchHandlerFunc(issuer.IssueBatch), consumer.Config{Name: "ticket-issuer"}, mws...)
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
