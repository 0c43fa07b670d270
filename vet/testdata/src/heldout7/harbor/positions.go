package harbor

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
)

type position struct {
	MMSI       string    `json:"mmsi"`
	Lat        float64   `json:"lat"`
	Lon        float64   `json:"lon"`
	ReportedAt time.Time `json:"reported_at"`
}

// positionTracker keeps each vessel's latest position. It runs without a
// claim: the upsert only moves forward in time.
type positionTracker struct {
	pool *pgxpool.Pool
}

func (t *positionTracker) Handle(ctx context.Context, msg *consumer.Message) error {
	var p position
	if err := json.Unmarshal(msg.Body, &p); err != nil {
		return consumer.Permanent(err)
	}
	_, err := t.pool.Exec(ctx, `INSERT INTO vessel_positions (mmsi, lat, lon, reported_at) VALUES ($1, $2, $3, $4)
		ON CONFLICT (mmsi) DO UPDATE SET lat = EXCLUDED.lat, lon = EXCLUDED.lon, reported_at = EXCLUDED.reported_at
		WHERE vessel_positions.reported_at < EXCLUDED.reported_at`, p.MMSI, p.Lat, p.Lon, p.ReportedAt)
	return err
}
