// Package underwriting prices policy applications against several risk tables.
package underwriting

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
	"golang.org/x/sync/errgroup"
)

type application struct {
	ID       string `json:"id"`
	Postcode string `json:"postcode"`
	Age      int    `json:"age"`
	Vehicle  string `json:"vehicle"`
}

var riskTables = []string{"postcode_risk", "age_risk", "vehicle_risk"}

// Pricer prices applications.
type Pricer struct{}

func (Pricer) price(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var a application
	if err := json.Unmarshal(msg.Body, &a); err != nil {
		return consumer.Permanent(err)
	}
	keys := []any{a.Postcode, a.Age, a.Vehicle}
	factors := make([]float64, len(riskTables))
	g, gctx := errgroup.WithContext(ctx)
	for i, table := range riskTables {
		g.Go(func() error {
			return tx.QueryRow(gctx, `SELECT factor FROM `+table+` WHERE key = $1`, keys[i]).Scan(&factors[i]) // want "claim transaction used from errgroup goroutines"
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	premium := 100.0
	for _, f := range factors {
		premium *= f
	}
	_, err := tx.Exec(ctx, `UPDATE applications SET premium = $2, status = 'priced' WHERE id = $1`, a.ID, premium)
	return err
}

// Run consumes applications.
func Run(ctx context.Context, pool *pgxpool.Pool, src consumer.Source) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	c, err := consumer.New(src, postgres.HandlerFunc(Pricer{}.price), consumer.Config{Name: "underwriting"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
