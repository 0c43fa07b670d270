package telemetry

import (
	"context"
	"log/slog"

	"github.com/oncely/oncely/store/postgres"
)

// enrichJob is one reading waiting for its reverse-geocoded area.
type enrichJob struct {
	ctx     context.Context
	reading reading
}

// enricher resolves positions to areas off the hot path: geocoding is slow,
// and the handler should not wait for it.
type enricher struct {
	jobs chan enrichJob
	geo  Geocoder
	log  *slog.Logger
}

func newEnricher(geo Geocoder, workers int, log *slog.Logger) *enricher {
	e := &enricher{jobs: make(chan enrichJob, 256), geo: geo, log: log}
	for range workers {
		go e.work()
	}
	return e
}

// Submit queues r for enrichment.
func (e *enricher) Submit(ctx context.Context, r reading) {
	e.jobs <- enrichJob{ctx: ctx, reading: r}
}

func (e *enricher) work() {
	for j := range e.jobs {
		area := e.geo.AreaOf(j.reading.Lat, j.reading.Lon)
		tx, ok := postgres.Tx(j.ctx)
		if !ok {
			continue
		}
		if _, err := tx.Exec(j.ctx, `UPDATE device_positions SET area = $2 WHERE device_id = $1`, j.reading.DeviceID, area); err != nil {
			e.log.Warn("enrich", "device", j.reading.DeviceID, "err", err)
		}
	}
}

func (e *enricher) stop() { close(e.jobs) }
