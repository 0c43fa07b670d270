// Package seismo measures waveforms from the seismic stations and keeps each
// event's station magnitudes.
package seismo

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
)

// Network is the batch handler.
type Network struct {
	workers int
}

// Measure analyses the batch in parallel, then writes the picks in the
// batch's transaction, from this goroutine only.
func (n *Network) Measure(ctx context.Context, tx pgx.Tx, msgs []*consumer.Message) error {
	picks := analyse(ctx, msgs, n.workers)
	b := &pgx.Batch{}
	for _, p := range picks {
		if p.err != nil {
			return p.err
		}
		b.Queue(`INSERT INTO station_magnitudes (event_id, station, amplitude, ml) VALUES ($1, $2, $3, $4)
			ON CONFLICT (event_id, station) DO UPDATE SET amplitude = EXCLUDED.amplitude, ml = EXCLUDED.ml`,
			p.eventID, p.station, p.amplitude, p.magnitude)
	}
	return tx.SendBatch(ctx, b).Close()
}
