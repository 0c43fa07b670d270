// Package tariffs quotes shipping prices for weighed parcels.
package tariffs

import (
	"context"
	"math"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/store/postgres"

	"heldout/platform/pipeline"
	"heldout/tariffs/internal/sqlc"
)

// Quoter prices parcels. Rates are read from the pool: they change rarely
// and need not be read in the handler's transaction.
type Quoter struct {
	rates    *sqlc.Queries
	carriers []string
}

type parcelWeighed struct {
	ParcelID string  `json:"parcel_id"`
	Zone     string  `json:"zone"`
	Kg       float64 `json:"kg"`
}

func (q *Quoter) quote(ctx context.Context, tx pgx.Tx, p parcelWeighed) error {
	writes := sqlc.New(tx)
	for _, carrier := range q.carriers {
		rate, err := q.rates.GetZoneRate(ctx, sqlc.GetZoneRateParams{Zone: p.Zone, Carrier: carrier})
		if err != nil {
			return err
		}
		cents := int64(math.Ceil(p.Kg * float64(rate)))
		if err := writes.InsertQuote(ctx, sqlc.InsertQuoteParams{ParcelID: p.ParcelID, Carrier: carrier, Cents: cents}); err != nil {
			return err
		}
	}
	return nil
}

// Run consumes parcels.weighed.
func Run(ctx context.Context, broker adapters.Broker, pool *pgxpool.Pool) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	q := &Quoter{rates: sqlc.New(pool), carriers: []string{"dhl", "ups", "postnl"}}
	return pipeline.Run(ctx, broker, st, pipeline.Spec{
		Source:  "parcels.weighed",
		Name:    "tariffs",
		Handler: pipeline.Typed(q.quote),
	})
}
