package service

import (
	"context"
	"net/http"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"

	"heldout9/notify/push"
	"heldout9/notify/templates"
)

// Run starts the render and deliver consumers.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	s := &Service{
		templates: &templates.Client{Base: "http://templates.internal", HC: http.DefaultClient},
		push:      &push.Sender{Endpoint: "https://push.example.net/v1/send", HC: http.DefaultClient},
	}
	rsrc, err := broker.Source(ctx, "notify.requested", "notify-render")
	if err != nil {
		return err
	}
	render, err := consumer.New(rsrc, postgres.HandlerFunc(s.Render), consumer.Config{Name: "notify-render"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	dsrc, err := broker.Source(ctx, "notify.deliver", "notify-deliver")
	if err != nil {
		return err
	}
	deliver, err := consumer.New(dsrc, consumer.HandlerFunc(s.Deliver), consumer.Config{
		Name:       "notify-deliver",
		Duplicates: consumer.AllowDuplicates("the push provider dedupes on Idempotency-Key, which is the outbox message ID"),
	}, middleware.Logging())
	if err != nil {
		return err
	}
	go deliver.Run(ctx)
	return render.Run(ctx)
}
