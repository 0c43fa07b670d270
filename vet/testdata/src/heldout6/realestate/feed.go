// Package realestate ingests the MLS listing feed.
package realestate

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"

	"heldout6/realestate/db"
)

type listingEvent struct {
	MLS      string `json:"mls"`
	PriceCts int64  `json:"price_cents"`
	Status   string `json:"status"`
}

// Feed applies listing updates.
type Feed struct {
	Queries *db.Queries
}

func (f *Feed) apply(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var ev listingEvent
	if err := json.Unmarshal(msg.Body, &ev); err != nil {
		return consumer.Permanent(err)
	}
	q := f.Queries.WithTx(tx)
	old, err := q.GetListingPrice(ctx, ev.MLS)
	if err != nil {
		return err
	}
	if err := q.UpsertListing(ctx, db.UpsertListingParams{MLSNumber: ev.MLS, PriceCts: ev.PriceCts, Status: ev.Status}); err != nil {
		return err
	}
	if old == ev.PriceCts {
		return nil
	}
	return f.Queries.InsertPriceHistory(ctx, ev.MLS, ev.PriceCts) // want "pool write inside transactional handler"
}
