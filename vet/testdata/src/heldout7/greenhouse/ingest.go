package greenhouse

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"

	"heldout7/internal/climatedb"
)

type reading struct {
	Sensor   string    `json:"sensor"`
	At       time.Time `json:"at"`
	Celsius  float64   `json:"celsius"`
	Humidity float64   `json:"humidity"`
}

func (s *Service) ingest(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var r reading
	if err := json.Unmarshal(msg.Body, &r); err != nil {
		return consumer.Permanent(fmt.Errorf("reading %s: %w", msg.ID, err))
	}
	q := s.queries.WithTx(tx)
	sensor, err := q.GetSensor(ctx, r.Sensor)
	if err != nil {
		return fmt.Errorf("sensor %s: %w", r.Sensor, err)
	}
	if err := q.InsertReading(ctx, climatedb.InsertReadingParams{
		SensorID: r.Sensor, TakenAt: r.At, Celsius: r.Celsius, Humidity: r.Humidity,
	}); err != nil {
		return err
	}
	if err := s.queries.TouchSensor(ctx, r.Sensor, r.At); err != nil { // want "pool"
		return err
	}
	if r.Celsius < sensor.MinCelsius || r.Celsius > sensor.MaxCelsius {
		s.log.Warn("zone out of range", "zone", sensor.Zone, "sensor", r.Sensor, "celsius", r.Celsius)
		return q.OpenAlarm(ctx, climatedb.OpenAlarmParams{
			Zone: sensor.Zone, SensorID: r.Sensor, OpenedAt: r.At,
			Reason: fmt.Sprintf("%.1f°C outside [%.1f, %.1f]", r.Celsius, sensor.MinCelsius, sensor.MaxCelsius),
		})
	}
	return nil
}
