// Package geo keeps the store locator's coordinates in step with the
// address book. Each message carries the full, current location of a store,
// so writing it twice leaves the same row.
package geo

import (
	"context"
	"database/sql"
	"encoding/json"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
)

type storeMoved struct {
	StoreID string  `json:"store_id"`
	Lat     float64 `json:"lat"`
	Lng     float64 `json:"lng"`
	Version int64   `json:"version"`
}

type locator struct {
	db *sql.DB
}

func (l *locator) Handle(ctx context.Context, msg *consumer.Message) error {
	var ev storeMoved
	if err := json.Unmarshal(msg.Body, &ev); err != nil {
		return consumer.Permanent(err)
	}
	_, err := l.db.ExecContext(ctx,
		`INSERT INTO store_locations (store_id, lat, lng, version) VALUES ($1, $2, $3, $4)
		 ON CONFLICT (store_id) DO UPDATE SET lat = EXCLUDED.lat, lng = EXCLUDED.lng, version = EXCLUDED.version
		 WHERE store_locations.version < EXCLUDED.version`,
		ev.StoreID, ev.Lat, ev.Lng, ev.Version)
	return err
}

// Run consumes stores.moved.
func Run(ctx context.Context, broker adapters.Broker, db *sql.DB) error {
	src, err := broker.Source(ctx, "stores.moved", "geo")
	if err != nil {
		return err
	}
	c, err := consumer.New(src, &locator{db: db}, consumer.Config{
		Name:       "geo",
		Duplicates: consumer.AllowDuplicates("versioned upsert of the full location; replays are no-ops"),
	}, middleware.Logging())
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
