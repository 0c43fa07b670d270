// Package telemetry ingests device positions and keeps each device's last
// known position and area.
package telemetry

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

// Geocoder maps a coordinate to an area name.
type Geocoder interface {
	AreaOf(lat, lon float64) string
}

type reading struct {
	DeviceID string  `json:"device_id"`
	Lat      float64 `json:"lat"`
	Lon      float64 `json:"lon"`
	Seq      int64   `json:"seq"`
}

// Ingestor is the consumer's handler.
type Ingestor struct {
	enrich *enricher
}

// Handle stores the position in the claim's transaction and queues its
// enrichment.
func (in *Ingestor) Handle(ctx context.Context, msg *consumer.Message) error {
	tx, ok := postgres.Tx(ctx)
	if !ok {
		return errors.New("telemetry: no transaction in context")
	}
	var r reading
	if err := json.Unmarshal(msg.Body, &r); err != nil {
		return consumer.Permanent(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO device_positions (device_id, lat, lon, seq) VALUES ($1, $2, $3, $4)
		ON CONFLICT (device_id) DO UPDATE SET lat = EXCLUDED.lat, lon = EXCLUDED.lon, seq = EXCLUDED.seq
		WHERE device_positions.seq < EXCLUDED.seq`, r.DeviceID, r.Lat, r.Lon, r.Seq); err != nil {
		return err
	}
	in.enrich.Submit(ctx, r) // want "the handler's context, carrying its transaction, handed to the enricher's goroutines"
	return nil
}
