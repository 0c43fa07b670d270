// Package parcels consumes carrier scan events from SQS and keeps the
// parcel table current.
package parcels

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

// Config is what main reads from the environment.
type Config struct {
	BrokerURL string // sqs://eu-west-1?endpoint=...
	DB        *pgxpool.Pool
	Logger    *slog.Logger
}

// Run consumes scans until ctx ends.
func Run(ctx context.Context, cfg Config) error {
	pool := cfg.DB
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	broker, err := adapters.Open(ctx, cfg.BrokerURL)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "carrier-scans", "parcels")
	if err != nil {
		return err
	}

	// markDelivered closes the parcel's open delivery window.
	markDelivered := func(ctx context.Context, parcel string, at time.Time) error {
		_, err := pool.Exec(ctx, `UPDATE delivery_windows SET closed_at = $2 WHERE parcel_id = $1 AND closed_at IS NULL`, parcel, at) // want "."
		return err
	}

	h := postgres.HandlerFunc(func(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
		var scan struct {
			Parcel string    `json:"parcel"`
			Status string    `json:"status"`
			At     time.Time `json:"at"`
		}
		if err := json.Unmarshal(msg.Body, &scan); err != nil {
			return consumer.Permanent(err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO parcel_scans (parcel_id, status, scanned_at, message_id) VALUES ($1, $2, $3, $4)`,
			scan.Parcel, scan.Status, scan.At, msg.ID); err != nil {
			return fmt.Errorf("record scan: %w", err)
		}
		if scan.Status == "delivered" {
			return markDelivered(ctx, scan.Parcel, scan.At)
		}
		return nil
	})

	c, err := consumer.New(src, h, consumer.Config{Name: "parcels", Concurrency: 8}, middleware.Logging(), middleware.Idempotency(st))
	if err != nil {
		return err
	}
	cfg.Logger.Info("parcels consumer started")
	return c.Run(ctx)
}
