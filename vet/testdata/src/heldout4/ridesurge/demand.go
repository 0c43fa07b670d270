// Package ridesurge aggregates ride requests per zone for surge pricing.
package ridesurge

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
)

type rideRequested struct {
	RiderID string    `json:"rider_id"`
	ZoneID  string    `json:"zone_id"`
	At      time.Time `json:"at"`
}

// DemandCounter counts ride requests per zone and five-minute bucket.
type DemandCounter struct {
	pool *pgxpool.Pool
}

// Handle counts one request.
func (d *DemandCounter) Handle(ctx context.Context, msg *consumer.Message) error {
	var r rideRequested
	if err := json.Unmarshal(msg.Body, &r); err != nil {
		return consumer.Permanent(fmt.Errorf("decode request: %w", err))
	}
	bucket := r.At.Truncate(5 * time.Minute)
	_, err := d.pool.Exec(ctx,
		`INSERT INTO zone_demand (zone_id, bucket, requests) VALUES ($1, $2, 1)
		 ON CONFLICT (zone_id, bucket) DO UPDATE SET requests = zone_demand.requests + 1`,
		r.ZoneID, bucket)
	if err != nil {
		return fmt.Errorf("count demand: %w", err)
	}
	return nil
}
