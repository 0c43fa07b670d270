// Command ticketd runs the booking consumers and the stats publisher.
package main

import (
	"context"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
	"github.com/twmb/franz-go/pkg/kgo"

	"heldout9/tickets/internal/booking"
	"heldout9/tickets/internal/stats"
)

func main() {
	ctx := context.Background()
	var pool *pgxpool.Pool
	kc, err := kgo.NewClient(kgo.SeedBrokers(os.Getenv("KAFKA_BROKERS")))
	if err != nil {
		os.Exit(1)
	}
	s := stats.New(kc, "tickets.stats")
	go func() {
		t := time.NewTicker(time.Minute)
		for range t.C {
			_ = s.Publish(ctx)
		}
	}()
	st, _ := postgres.New(pool)
	broker, err := adapters.Open(ctx, os.Getenv("BROKER_URL"))
	if err != nil {
		os.Exit(1)
	}
	b := booking.Booker{Stats: s}
	for topic, fn := range map[string]consumer.Handler{
		"tickets.requested": postgres.HandlerFunc(b.Book),
		"tickets.released":  postgres.HandlerFunc(b.Release),
	} {
		src, err := broker.Source(ctx, topic, "tickets")
		if err != nil {
			os.Exit(1)
		}
		c, err := consumer.New(src, fn, consumer.Config{Name: "tickets-" + topic}, middleware.Idempotency(st))
		if err != nil {
			os.Exit(1)
		}
		go c.Run(ctx)
	}
	select {}
}
