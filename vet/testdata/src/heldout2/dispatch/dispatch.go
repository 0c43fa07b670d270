// Package dispatch assigns delivery routes to drivers.
package dispatch

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

type stop struct {
	ID  string  `json:"id"`
	Lat float64 `json:"lat"`
	Lon float64 `json:"lon"`
}

type handlerFn func(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error

var handlers = map[string]handlerFn{
	"route.plan":   planRoute,
	"route.cancel": cancelRoute,
}

func handle(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	h, ok := handlers[msg.Headers["kind"]]
	if !ok {
		return consumer.Permanent(fmt.Errorf("unknown kind %q", msg.Headers["kind"]))
	}
	return h(ctx, tx, msg)
}

func planRoute(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var stops []stop
	if err := json.Unmarshal(msg.Body, &stops); err != nil {
		return consumer.Permanent(err)
	}
	dist := make([]float64, len(stops))
	var wg sync.WaitGroup
	for i := range stops {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i > 0 {
				dist[i] = math.Hypot(stops[i].Lat-stops[i-1].Lat, stops[i].Lon-stops[i-1].Lon)
			}
		}()
	}
	wg.Wait()
	var total float64
	for _, d := range dist {
		total += d
	}
	_, err := tx.Exec(ctx, `INSERT INTO routes (id, stops, length) VALUES ($1, $2, $3)`, msg.Key, len(stops), total)
	return err
}

func cancelRoute(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	_, err := tx.Exec(ctx, `UPDATE routes SET cancelled = true WHERE id = $1`, msg.Key)
	return err
}

// Run wires the dispatcher.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "routes", "dispatch")
	if err != nil {
		return err
	}
	c, err := consumer.New(src, postgres.HandlerFunc(handle), consumer.Config{Name: "dispatch"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
