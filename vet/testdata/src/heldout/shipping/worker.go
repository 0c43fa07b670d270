// Package shipping books shipments for paid orders.
package shipping

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"

	"heldout/platform/pipeline"
	"heldout/shipping/internal/db"
)

// Worker books shipments.
type Worker struct {
	q       *db.Queries
	carrier string
}

// NewWorker returns a Worker using pool for its queries.
func NewWorker(pool *pgxpool.Pool, defaultCarrier string) *Worker {
	return &Worker{q: db.New(pool), carrier: defaultCarrier}
}

// Run consumes payments.captured.
func (w *Worker) Run(ctx context.Context, broker adapters.Broker, pool *pgxpool.Pool) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	return pipeline.Run(ctx, broker, st, pipeline.Spec{
		Source:  "payments.captured",
		Name:    "shipping",
		Handler: postgres.HandlerFunc(w.book),
	})
}

type paymentCaptured struct {
	OrderID string `json:"order_id"`
	Address struct {
		ID      string `json:"id"`
		Line1   string `json:"line1"`
		City    string `json:"city"`
		Country string `json:"country"`
	} `json:"ship_to"`
}

func (w *Worker) book(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var ev paymentCaptured
	if err := json.Unmarshal(msg.Body, &ev); err != nil {
		return consumer.Permanent(err)
	}
	qtx := w.q.WithTx(tx)
	if err := qtx.UpsertAddress(ctx, db.UpsertAddressParams{
		ID:      ev.Address.ID,
		Line1:   ev.Address.Line1,
		City:    ev.Address.City,
		Country: ev.Address.Country,
	}); err != nil {
		return fmt.Errorf("address: %w", err)
	}
	if err := w.q.CreateShipment(ctx, db.CreateShipmentParams{ // want "generated query built from the pool"
		ID:        "shp-" + ev.OrderID,
		OrderID:   ev.OrderID,
		Carrier:   w.carrier,
		AddressID: ev.Address.ID,
	}); err != nil {
		return fmt.Errorf("shipment: %w", err)
	}
	return nil
}
