// Package logistics tracks parcel scans at sorting stations.
package logistics

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"

	"heldout6/logistics/dispatch"
)

type scan struct {
	Parcel  string `json:"parcel"`
	Station string `json:"station"`
}

type scanHandler struct {
	jobs chan<- dispatch.Job
}

func (h *scanHandler) Handle(ctx context.Context, msg *consumer.Message) error {
	tx, ok := postgres.Tx(ctx)
	if !ok {
		return errors.New("logistics: no claim transaction")
	}
	var s scan
	if err := json.Unmarshal(msg.Body, &s); err != nil {
		return consumer.Permanent(err)
	}
	if _, err := tx.Exec(ctx, `UPDATE parcels SET last_station = $2 WHERE id = $1`, s.Parcel, s.Station); err != nil {
		return err
	}
	h.jobs <- dispatch.Job{Ctx: ctx, Parcel: s.Parcel, Station: s.Station} // want "handler context with its transaction handed to a background goroutine"
	return nil
}

// Run starts the flusher and the scan consumer.
func Run(ctx context.Context, src consumer.Source, pool *pgxpool.Pool, log *slog.Logger) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	f := &dispatch.Flusher{Jobs: make(chan dispatch.Job, 256), Log: log}
	go f.Loop(ctx)
	c, err := consumer.New(src, &scanHandler{jobs: f.Jobs}, consumer.Config{Name: "parcel-scans"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
