// Package lots is the auction house's domain: lots and the bids on them.
package lots

import "errors"

// ErrClosed is returned for a bid on a lot whose auction ended.
var ErrClosed = errors.New("lot closed")

// ErrTooLow is returned for a bid under the current price plus increment.
var ErrTooLow = errors.New("bid too low")

// Bid is one bid placed by a bidder.
type Bid struct {
	LotID    string `json:"lot_id"`
	BidderID string `json:"bidder_id"`
	Cents    int64  `json:"cents"`
}

// Lot is the state a bid is checked against.
type Lot struct {
	ID         string
	HighCents  int64
	Increment  int64
	Closed     bool
	HighBidder string
}

// Accept checks b against the lot and, when it wins, raises the lot.
func (l *Lot) Accept(b Bid) error {
	if l.Closed {
		return ErrClosed
	}
	if b.Cents < l.HighCents+l.Increment {
		return ErrTooLow
	}
	l.HighCents, l.HighBidder = b.Cents, b.BidderID
	return nil
}
