// Package warranty registers warranty claims from the service desks in
// batches and keeps the per-product claim counters for the dashboard.
package warranty

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
)

type claimFiled struct {
	ClaimID   string `json:"claim_id"`
	ProductID string `json:"product_id"`
	Serial    string `json:"serial"`
	Fault     string `json:"fault"`
}

// Registrar files warranty claims.
type Registrar struct {
	pool *pgxpool.Pool
}

type decoded struct {
	claims   []claimFiled
	failed   map[int]error
	products map[string]int
}

func (r *Registrar) decodeAll(msgs []*consumer.Message) decoded {
	d := decoded{failed: map[int]error{}, products: map[string]int{}}
	for i, m := range msgs {
		var c claimFiled
		if err := json.Unmarshal(m.Body, &c); err != nil {
			d.failed[i] = consumer.Permanent(err)
			continue
		}
		d.claims = append(d.claims, c)
		d.products[c.ProductID]++
	}
	return d
}

func (r *Registrar) insertClaims(ctx context.Context, tx pgx.Tx, cs []claimFiled) error {
	ids := make([]string, len(cs))
	products := make([]string, len(cs))
	serials := make([]string, len(cs))
	faults := make([]string, len(cs))
	for i, c := range cs {
		ids[i], products[i], serials[i], faults[i] = c.ClaimID, c.ProductID, c.Serial, c.Fault
	}
	_, err := tx.Exec(ctx, `INSERT INTO warranty_claims (id, product_id, serial, fault)
		SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) ON CONFLICT (id) DO NOTHING`,
		ids, products, serials, faults)
	return err
}

// bumpCounters adds the batch's claims to the dashboard counters.
func (r *Registrar) bumpCounters(ctx context.Context, counts map[string]int) error {
	// own short transaction: the counters are hot rows, keep their locks brief
	return pgx.BeginFunc(ctx, r.pool, func(own pgx.Tx) error { // want "counters updated in a transaction of the pool"
		for product, n := range counts {
			if _, err := own.Exec(ctx, `UPDATE product_claim_counts SET n = n + $2 WHERE product_id = $1`, product, n); err != nil {
				return err
			}
		}
		return nil
	})
}

// HandleBatch files a batch of claims in the batch's transaction.
func (r *Registrar) HandleBatch(ctx context.Context, tx pgx.Tx, msgs []*consumer.Message) error {
	d := r.decodeAll(msgs)
	if len(d.claims) > 0 {
		if err := r.insertClaims(ctx, tx, d.claims); err != nil {
			return err
		}
		if err := r.bumpCounters(ctx, d.products); err != nil {
			return err
		}
	}
	if len(d.failed) > 0 {
		return failedOnes(d.failed)
	}
	return nil
}
