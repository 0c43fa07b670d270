// Package meterstats computes daily consumption statistics per meter.
package meterstats

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"sort"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

var errEmptyDay = errors.New("meterstats: day without readings")

type day struct {
	MeterID string    `json:"meter_id"`
	Date    string    `json:"date"`
	Kwh     []float64 `json:"kwh"`
}

type stats struct {
	mean, p95, stddev float64
}

func compute(ctx context.Context, d day) stats {
	var s stats
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		var sum float64
		for _, v := range d.Kwh {
			sum += v
		}
		s.mean = sum / float64(len(d.Kwh))
		var sq float64
		for _, v := range d.Kwh {
			sq += (v - s.mean) * (v - s.mean)
		}
		s.stddev = math.Sqrt(sq / float64(len(d.Kwh)))
	}()
	go func() {
		defer wg.Done()
		if ctx.Err() != nil {
			return
		}
		sorted := append([]float64(nil), d.Kwh...)
		sort.Float64s(sorted)
		s.p95 = sorted[int(float64(len(sorted)-1)*0.95)]
	}()
	wg.Wait()
	return s
}

func handle(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var d day
	if err := json.Unmarshal(msg.Body, &d); err != nil {
		return consumer.Permanent(err)
	}
	if len(d.Kwh) == 0 {
		return consumer.Permanent(errEmptyDay)
	}
	s := compute(ctx, d)
	_, err := tx.Exec(ctx, `INSERT INTO meter_daily (meter_id, day, mean, p95, stddev) VALUES ($1, $2, $3, $4, $5)`, d.MeterID, d.Date, s.mean, s.p95, s.stddev)
	return err
}

// Run consumes daily reading bundles.
func Run(ctx context.Context, pool *pgxpool.Pool, src consumer.Source) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	c, err := consumer.New(src, postgres.HandlerFunc(handle), consumer.Config{Name: "meterstats"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
