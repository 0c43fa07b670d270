// Package auction closes lots and picks the winning bid.
package auction

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

type bid struct {
	Bidder   string `json:"bidder"`
	AmountCt int64  `json:"amount_cents"`
	Proxy    int64  `json:"proxy_max_cents"`
}

type lotClosed struct {
	Lot  string `json:"lot"`
	Bids []bid  `json:"bids"`
}

// score ranks one bid; proxy bids are worth their ceiling.
func score(b bid) int64 {
	if b.Proxy > b.AmountCt {
		return b.Proxy
	}
	return b.AmountCt
}

func closeLot(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var lc lotClosed
	if err := json.Unmarshal(msg.Body, &lc); err != nil {
		return consumer.Permanent(err)
	}
	if len(lc.Bids) == 0 {
		_, err := tx.Exec(ctx, `UPDATE lots SET status = 'unsold' WHERE id = $1`, lc.Lot)
		return err
	}
	scores := make([]int64, len(lc.Bids))
	var wg sync.WaitGroup
	for i, b := range lc.Bids {
		wg.Add(1)
		go func(i int, b bid) {
			defer wg.Done()
			scores[i] = score(b)
		}(i, b)
	}
	wg.Wait()
	best := 0
	for i := range scores {
		if scores[i] > scores[best] {
			best = i
		}
	}
	_, err := tx.Exec(ctx, `UPDATE lots SET status = 'sold', winner = $2, hammer_cents = $3 WHERE id = $1`,
		lc.Lot, lc.Bids[best].Bidder, scores[best])
	return err
}

// Run starts the lot closer.
func Run(ctx context.Context, src consumer.Source, st *postgres.Store) error {
	c, err := consumer.New(src, postgres.HandlerFunc(closeLot), consumer.Config{Name: "auction-close"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
