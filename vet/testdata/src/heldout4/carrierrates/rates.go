package carrierrates

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
)

// rateCard is the carrier's public tariff API; quotes are pure reads.
type rateCard struct {
	base string
	hc   *http.Client
}

type quote struct {
	Service     string `json:"service"`
	PriceCents  int64  `json:"price_cents"`
	TransitDays int    `json:"transit_days"`
}

func (r *rateCard) quotes(ctx context.Context, from, to string, grams int) ([]quote, error) {
	q := url.Values{"from": {from}, "to": {to}, "weight_g": {fmt.Sprint(grams)}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.base+"/v1/rates?"+q.Encode(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := r.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("rates: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("rates: %s", resp.Status)
	}
	var out []quote
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, fmt.Errorf("decode rates: %w", err)
	}
	return out, nil
}
