// Package shipments books carrier pickups and announces them via the outbox.
package shipments

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/outbox"
	"github.com/oncely/oncely/store/postgres"
)

type booking struct {
	Shipment string    `json:"shipment"`
	Carrier  string    `json:"carrier"`
	At       time.Time `json:"at"`
}

func bookPickup(carrier string, window time.Duration) func(context.Context, pgx.Tx, *consumer.Message) error {
	return func(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
		b := booking{Shipment: msg.Key, Carrier: carrier, At: time.Now().Add(window)}
		if _, err := tx.Exec(ctx, `INSERT INTO pickups (shipment_id, carrier, at) VALUES ($1, $2, $3)`, b.Shipment, b.Carrier, b.At); err != nil {
			return fmt.Errorf("pickup: %w", err)
		}
		body, _ := json.Marshal(b)
		return outbox.Send(ctx, tx, "shipments.booked", &consumer.Message{Key: b.Shipment, Body: body})
	}
}

// heartbeat tells the carrier gateway this service is alive; it runs
// beside the consumer and touches no message.
func heartbeat(ctx context.Context, nc *nats.Conn) {
	t := time.NewTicker(30 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			_ = nc.Publish("carriers.heartbeat.shipments", []byte(time.Now().UTC().Format(time.RFC3339)))
		}
	}
}

// Run wires the booking consumer.
func Run(ctx context.Context, pool *pgxpool.Pool, nc *nats.Conn, broker adapters.Broker) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "shipments.ready", "pickup-booker")
	if err != nil {
		return err
	}
	h := postgres.HandlerFunc(bookPickup("dhl", 4*time.Hour))
	c, err := consumer.New(src, h, consumer.Config{Name: "pickup-booker"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	go heartbeat(ctx, nc)
	return c.Run(ctx)
}
