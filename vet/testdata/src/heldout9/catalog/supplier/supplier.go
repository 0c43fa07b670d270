// Package supplier reads product data from suppliers' feeds.
package supplier

import (
	"context"
	"encoding/json"
	"net/http"
)

// Feed reads one supplier's product feed.
type Feed struct {
	URL string
	HC  *http.Client
}

// Product is a supplier's view of a product.
type Product struct {
	SKU   string `json:"sku"`
	Price int64  `json:"price"`
	Stock int    `json:"stock"`
}

// Lookup fetches sku from the feed.
func (f *Feed) Lookup(ctx context.Context, sku string) (Product, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.URL+"/products/"+sku, nil)
	if err != nil {
		return Product{}, err
	}
	resp, err := f.HC.Do(req)
	if err != nil {
		return Product{}, err
	}
	defer resp.Body.Close()
	var p Product
	return p, json.NewDecoder(resp.Body).Decode(&p)
}
