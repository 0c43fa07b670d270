package vetclinic

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

type vaccinated struct {
	Patient string `json:"patient"`
	Species string `json:"species"`
	Vaccine string `json:"vaccine"`
}

type recorder struct {
	cache *speciesCache
}

func (r *recorder) record(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var v vaccinated
	if err := json.Unmarshal(msg.Body, &v); err != nil {
		return consumer.Permanent(err)
	}
	days, err := r.cache.boosterDays(ctx, v.Species, v.Vaccine)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `INSERT INTO vaccinations (patient, vaccine, booster_due) VALUES ($1, $2, current_date + $3::int)`,
		v.Patient, v.Vaccine, days)
	return err
}

// Run starts the vaccination consumer.
func Run(ctx context.Context, src consumer.Source, pool *pgxpool.Pool) error {
	r := &recorder{cache: &speciesCache{pool: pool, days: map[string]int{}}}
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	c, err := consumer.New(src, postgres.HandlerFunc(r.record), consumer.Config{Name: "vet-vaccinations"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
