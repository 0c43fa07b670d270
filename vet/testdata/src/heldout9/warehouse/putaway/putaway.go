// Package putaway places received goods into bins.
package putaway

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"

	"heldout9/warehouse/store"
)

// Putaway places goods.
type Putaway struct {
	db *store.Store
}

type received struct {
	Bin string `json:"bin"`
	SKU string `json:"sku"`
	Qty int    `json:"qty"`
}

func (p *Putaway) received(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var r received
	if err := json.Unmarshal(msg.Body, &r); err != nil {
		return consumer.Permanent(err)
	}
	if err := store.LocationsIn(tx).Place(ctx, r.Bin, r.SKU, r.Qty); err != nil {
		return err
	}
	return p.db.InTx(ctx, func(own pgx.Tx) error { // want "."
		return store.LocationsIn(own).Free(ctx, r.Bin, r.Qty)
	})
}

func (p *Putaway) picked(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var r received
	if err := json.Unmarshal(msg.Body, &r); err != nil {
		return consumer.Permanent(err)
	}
	loc := store.LocationsIn(tx)
	if err := loc.Place(ctx, r.Bin, r.SKU, -r.Qty); err != nil {
		return err
	}
	return loc.Free(ctx, r.Bin, -r.Qty)
}

// Run wires the putaway consumers.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	p := &Putaway{db: store.New(pool)}
	idem := middleware.Idempotency(st)
	recv, err := broker.Source(ctx, "goods.received", "putaway")
	if err != nil {
		return err
	}
	pick, err := broker.Source(ctx, "goods.picked", "putaway")
	if err != nil {
		return err
	}
	c1, err := consumer.New(recv, postgres.HandlerFunc(p.received), consumer.Config{Name: "putaway-received"}, idem)
	if err != nil {
		return err
	}
	c2, err := consumer.New(pick, postgres.HandlerFunc(p.picked), consumer.Config{Name: "putaway-picked"}, idem)
	if err != nil {
		return err
	}
	go c2.Run(ctx)
	return c1.Run(ctx)
}
