// Package geocode assigns zones to addresses, and keeps the last-known
// position table, an idempotent upsert that needs no claim.
package geocode

import (
	"context"
	"database/sql"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"

	"heldout9/geo/internal/zones"
)

// Service assigns zones.
type Service struct {
	zones *zones.Lookup
	db    *sql.DB
}

type address struct {
	ID  string  `json:"id"`
	Lat float64 `json:"lat"`
	Lon float64 `json:"lon"`
}

func (s *Service) assign(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var a address
	if err := json.Unmarshal(msg.Body, &a); err != nil {
		return consumer.Permanent(err)
	}
	zone, err := s.zones.ZoneOf(ctx, a.Lat, a.Lon)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `UPDATE addresses SET zone = $2 WHERE id = $1`, a.ID, zone)
	return err
}

type ping struct {
	Courier string    `json:"courier"`
	Lat     float64   `json:"lat"`
	Lon     float64   `json:"lon"`
	At      time.Time `json:"at"`
}

// lastKnown keeps the newest position per courier; an older or repeated
// ping changes nothing.
func (s *Service) lastKnown(ctx context.Context, msg *consumer.Message) error {
	var p ping
	if err := json.Unmarshal(msg.Body, &p); err != nil {
		return consumer.Permanent(err)
	}
	_, err := s.db.ExecContext(ctx, `INSERT INTO courier_positions (courier, lat, lon, at) VALUES ($1, $2, $3, $4)
		ON CONFLICT (courier) DO UPDATE SET lat = EXCLUDED.lat, lon = EXCLUDED.lon, at = EXCLUDED.at
		WHERE courier_positions.at < EXCLUDED.at`, p.Courier, p.Lat, p.Lon, p.At)
	return err
}

// Start wires the geo consumers.
func Start(ctx context.Context, pool *pgxpool.Pool, db *sql.DB, broker adapters.Broker) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	s := &Service{zones: &zones.Lookup{DB: db}, db: db}
	addrSrc, err := broker.Source(ctx, "addresses.created", "geo-assign")
	if err != nil {
		return err
	}
	assign, err := consumer.New(addrSrc, postgres.HandlerFunc(s.assign), consumer.Config{Name: "geo-assign"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	pingSrc, err := broker.Source(ctx, "couriers.pings", "geo-last-known")
	if err != nil {
		return err
	}
	last, err := consumer.New(pingSrc, consumer.HandlerFunc(s.lastKnown), consumer.Config{
		Name:        "geo-last-known",
		Concurrency: 32,
		Duplicates:  consumer.AllowDuplicates("last-write-wins upsert guarded by the ping's timestamp: a repeat changes nothing"),
	})
	if err != nil {
		return err
	}
	go assign.Run(ctx)
	go last.Run(ctx)
	return nil
}
