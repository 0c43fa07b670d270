// Package auctionhouse applies bids in batches: each lot's bids in order,
// different lots side by side.
package auctionhouse

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"golang.org/x/sync/errgroup"

	"heldout8/auctionhouse/lots"
)

// BidBook is the batch handler.
type BidBook struct{}

func groupByLot(msgs []*consumer.Message) (map[string][]lots.Bid, error) {
	byLot := map[string][]lots.Bid{}
	for _, m := range msgs {
		var b lots.Bid
		if err := json.Unmarshal(m.Body, &b); err != nil {
			return nil, consumer.Permanent(err)
		}
		byLot[b.LotID] = append(byLot[b.LotID], b)
	}
	return byLot, nil
}

func (bb *BidBook) loadLot(ctx context.Context, tx pgx.Tx, id string) (*lots.Lot, error) {
	l := &lots.Lot{ID: id}
	err := tx.QueryRow(ctx, `SELECT high_cents, increment_cents, closed, high_bidder FROM lots WHERE id = $1 FOR UPDATE`, id).
		Scan(&l.HighCents, &l.Increment, &l.Closed, &l.HighBidder)
	return l, err
}

// applyLot applies one lot's bids in order and stores the outcome.
func (bb *BidBook) applyLot(ctx context.Context, tx pgx.Tx, lotID string, bids []lots.Bid) error {
	l, err := bb.loadLot(ctx, tx, lotID)
	if err != nil {
		return err
	}
	for _, b := range bids {
		outcome := "accepted"
		if err := l.Accept(b); errors.Is(err, lots.ErrTooLow) || errors.Is(err, lots.ErrClosed) {
			outcome = err.Error()
		} else if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO bids (lot_id, bidder_id, cents, outcome) VALUES ($1, $2, $3, $4)`,
			b.LotID, b.BidderID, b.Cents, outcome); err != nil {
			return err
		}
	}
	_, err = tx.Exec(ctx, `UPDATE lots SET high_cents = $2, high_bidder = $3 WHERE id = $1`, l.ID, l.HighCents, l.HighBidder)
	return err
}

// HandleBatch applies a batch of bids, lots in parallel.
func (bb *BidBook) HandleBatch(ctx context.Context, tx pgx.Tx, msgs []*consumer.Message) error {
	byLot, err := groupByLot(msgs)
	if err != nil {
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	for lotID, bids := range byLot {
		g.Go(func() error {
			return bb.applyLot(gctx, tx, lotID, bids) // want "the batch's transaction shared by the errgroup's goroutines"
		})
	}
	return g.Wait()
}
