// Package catalog is the pricing domain.
package catalog

import (
	"context"
	"errors"
)

// ErrBelowFloor is returned for a price under the product's floor.
var ErrBelowFloor = errors.New("price below floor")

// Price is a product's current price in a market.
type Price struct {
	SKU        string `json:"sku"`
	Market     string `json:"market"`
	Cents      int64  `json:"cents"`
	FloorCents int64  `json:"floor_cents"`
}

// Validate checks the price's invariants.
func (p Price) Validate() error {
	if p.Cents < p.FloorCents {
		return ErrBelowFloor
	}
	return nil
}

// PriceRepository stores prices.
type PriceRepository interface {
	Save(ctx context.Context, p Price) error
}
