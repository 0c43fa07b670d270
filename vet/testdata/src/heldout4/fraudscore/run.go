package fraudscore

import (
	"context"
	"net/http"
	"time"

	"cloud.google.com/go/pubsub"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

// Deps are the scorer's clients.
type Deps struct {
	Pool   *pgxpool.Pool
	Broker adapters.Broker
	S3     *s3.Client
	PubSub *pubsub.Client
	Mux    *http.ServeMux
}

// Run scores authorisations until ctx ends.
func Run(ctx context.Context, d Deps) error {
	r := &rules{s3: d.S3, bucket: "risk-models", key: "card-rules/current.json", ttl: 5 * time.Minute}
	d.Mux.Handle("POST /admin/rules/reload", reloadHandler(r, d.PubSub.Topic("fraud-rules-reload")))

	src, err := d.Broker.Source(ctx, "cards.authorisation", "fraud-score")
	if err != nil {
		return err
	}
	st, err := postgres.New(d.Pool)
	if err != nil {
		return err
	}
	s := &scorer{rules: r}
	c, err := consumer.New(src, postgres.HandlerFunc(s.score), consumer.Config{Name: "fraud-score", Concurrency: 16}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
