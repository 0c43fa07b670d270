// Package dispatch writes scan events in the background.
package dispatch

import (
	"context"
	"log/slog"

	"github.com/oncely/oncely/store/postgres"
)

// Job is one scan event to persist.
type Job struct {
	Ctx     context.Context
	Parcel  string
	Station string
}

// Flusher persists scan events queued by the handler.
type Flusher struct {
	Jobs chan Job
	Log  *slog.Logger
}

// Loop drains the queue until ctx ends.
func (f *Flusher) Loop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case j := <-f.Jobs:
			tx, ok := postgres.Tx(j.Ctx)
			if !ok {
				continue
			}
			if _, err := tx.Exec(j.Ctx, `INSERT INTO scans (parcel, station) VALUES ($1, $2)`, j.Parcel, j.Station); err != nil {
				f.Log.Warn("scan", "parcel", j.Parcel, "err", err)
			}
		}
	}
}
