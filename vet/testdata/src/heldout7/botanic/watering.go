package botanic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/redis/go-redis/v9"
)

type wateringRun struct {
	Bed     string `json:"bed"`
	Species string `json:"species"`
	Pots    int    `json:"pots"`
}

type waterer struct {
	rdb *redis.Client
	log *slog.Logger
}

var errNoSheet = errors.New("botanic: no care sheet")

func (w *waterer) sheet(ctx context.Context, species string) (CareSheet, error) {
	raw, err := w.rdb.Get(ctx, "care:"+species).Result()
	if err != nil {
		return CareSheet{}, fmt.Errorf("%w for %s: %w", errNoSheet, species, err)
	}
	var s CareSheet
	err = json.Unmarshal([]byte(raw), &s)
	return s, err
}

func (w *waterer) watered(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var run wateringRun
	if err := json.Unmarshal(msg.Body, &run); err != nil {
		return consumer.Permanent(err)
	}
	s, err := w.sheet(ctx, run.Species)
	if err != nil {
		return err
	}
	var runsToday int
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM watering WHERE bed = $1 AND at::date = current_date`, run.Bed).Scan(&runsToday); err != nil {
		return err
	}
	if runsToday >= s.MaxPerDay {
		w.log.Warn("bed over-watered today", "bed", run.Bed, "runs", runsToday)
	}
	_, err = tx.Exec(ctx, `INSERT INTO watering (bed, species, litres, at) VALUES ($1, $2, $3, now())`,
		run.Bed, run.Species, float64(run.Pots)*s.MlPerPot/1000)
	return err
}
