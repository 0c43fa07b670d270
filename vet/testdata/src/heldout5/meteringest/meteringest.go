// Package meteringest bulk-loads half-hourly meter intervals.
package meteringest

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

type interval struct {
	MeterID string  `json:"meter_id"`
	Start   int64   `json:"start"`
	Kwh     float64 `json:"kwh"`
}

type rows struct {
	in []interval
	i  int
}

func (r *rows) Next() bool { r.i++; return r.i <= len(r.in) }

// Loader loads intervals.
type Loader struct {
	pool *pgxpool.Pool
	log  *slog.Logger
}

func (l *Loader) load(ctx context.Context, tx pgx.Tx, msgs []*consumer.Message) error {
	var all []interval
	for _, m := range msgs {
		var batch []interval
		if err := json.Unmarshal(m.Body, &batch); err != nil {
			return consumer.Permanent(err)
		}
		all = append(all, batch...)
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"meter_intervals"}, []string{"meter_id", "start", "kwh"}, &rows{in: all}); err != nil {
		return err
	}
	b := &pgx.Batch{}
	for _, iv := range all {
		b.Queue(`UPDATE meters SET last_interval = greatest(last_interval, $2) WHERE id = $1`, iv.MeterID, iv.Start)
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return err
	}
	l.log.DebugContext(ctx, "loaded intervals", "n", len(all), "pool_conns", l.pool.Stat())
	return nil
}

// Run consumes interval batches.
func Run(ctx context.Context, pool *pgxpool.Pool, src consumer.Source) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	l := &Loader{pool: pool, log: slog.Default()}
	c, err := consumer.New(src, postgres.BatchHandlerFunc(l.load), consumer.Config{Name: "meteringest"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
