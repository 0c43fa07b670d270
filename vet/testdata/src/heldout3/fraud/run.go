// Package fraud scores payment attempts against the risk providers.
package fraud

import (
	"context"
	"net/http"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

// Providers lists the risk providers queried for every attempt.
var Providers = []struct{ Name, URL string }{
	{"velocity", "https://velocity.risk.internal/score"},
	{"geoip", "https://geoip.risk.internal/score"},
	{"cardnet", "https://cardnet.example/v2/score"},
}

// Run consumes payment attempts until ctx is done.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "payments.attempted", "fraud")
	if err != nil {
		return err
	}
	s := &scorer{http: http.DefaultClient}
	for _, p := range Providers {
		s.providers = append(s.providers, provider{name: p.Name, url: p.URL})
	}
	c, err := consumer.New(src, postgres.HandlerFunc(s.assess), consumer.Config{Name: "fraud", Concurrency: 32},
		middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
