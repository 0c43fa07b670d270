// Package ferry records vehicle boardings per sailing and announces each
// sailing's deck load to the port's signage.
package ferry

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

// Config configures the boarding consumer.
type Config struct {
	// Topic carries gate scans; default "ferry.boardings".
	Topic string
	// SignageSubject is the JetStream subject of deck-load updates;
	// default "signage.deckload".
	SignageSubject string
}

type boarding struct {
	Sailing string `json:"sailing"`
	Plate   string `json:"plate"`
	LaneM   int    `json:"lane_m"`
}

type deckLoad struct {
	Sailing string `json:"sailing"`
	UsedM   int    `json:"used_m"`
}

// Run consumes gate scans until ctx ends.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker, nc *nats.Conn, cfg Config, log *slog.Logger) error {
	if cfg.Topic == "" {
		cfg.Topic = "ferry.boardings"
	}
	if cfg.SignageSubject == "" {
		cfg.SignageSubject = "signage.deckload"
	}
	js, err := nc.JetStream()
	if err != nil {
		return fmt.Errorf("ferry: jetstream: %w", err)
	}
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, cfg.Topic, "ferry-boardings")
	if err != nil {
		return err
	}

	h := postgres.BatchHandlerFunc(func(ctx context.Context, tx pgx.Tx, msgs []*consumer.Message) error {
		used := map[string]int{}
		for _, m := range msgs {
			var b boarding
			if err := json.Unmarshal(m.Body, &b); err != nil {
				return consumer.Permanent(fmt.Errorf("boarding %s: %w", m.ID, err))
			}
			if _, err := tx.Exec(ctx, `INSERT INTO boardings (sailing, plate, lane_m) VALUES ($1, $2, $3)`, b.Sailing, b.Plate, b.LaneM); err != nil {
				return err
			}
			used[b.Sailing] += b.LaneM
		}
		for sailing, m := range used {
			var total int
			if err := tx.QueryRow(ctx, `UPDATE sailings SET used_m = used_m + $2 WHERE id = $1 RETURNING used_m`, sailing, m).Scan(&total); err != nil {
				return fmt.Errorf("sailing %s: %w", sailing, err)
			}
			body, _ := json.Marshal(deckLoad{Sailing: sailing, UsedM: total})
			if _, err := js.Publish(cfg.SignageSubject, body); err != nil { // want "outbox"
				return fmt.Errorf("signage: %w", err)
			}
		}
		log.Debug("boardings booked", "messages", len(msgs), "sailings", len(used))
		return nil
	})

	c, err := consumer.New(src, h, consumer.Config{Name: "ferry-boardings"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
