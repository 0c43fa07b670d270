// Package app wires the fraud service.
package app

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
	"github.com/redis/go-redis/v9"

	"heldout9/fraud/scoring"
	"heldout9/fraud/velocity"
)

// App is the fraud service.
type App struct {
	consumers []*consumer.Consumer
}

// New builds the consumers.
func New(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker, redisAddr string) (*App, error) {
	st, err := postgres.New(pool)
	if err != nil {
		return nil, err
	}
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	s := &scoring.Scorer{Velocity: velocity.New(rdb, time.Minute), Limit: 5, Now: time.Now}
	a := &App{}
	for _, r := range []struct {
		topic string
		h     consumer.Handler
	}{
		{"cards.authorised", postgres.HandlerFunc(s.Score)},
		{"cards.chargeback", postgres.HandlerFunc(s.Chargeback)},
	} {
		src, err := broker.Source(ctx, r.topic, "fraud")
		if err != nil {
			return nil, err
		}
		c, err := consumer.New(src, r.h, consumer.Config{Name: "fraud-" + r.topic}, middleware.Idempotency(st))
		if err != nil {
			return nil, err
		}
		a.consumers = append(a.consumers, c)
	}
	return a, nil
}

// Run runs every consumer until ctx ends.
func (a *App) Run(ctx context.Context) {
	for _, c := range a.consumers {
		go c.Run(ctx)
	}
	<-ctx.Done()
}
