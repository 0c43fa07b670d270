// Package eta asks the routing service for travel-time estimates.
package eta

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// Client queries the routing service.
type Client struct {
	Base string
	HTTP *http.Client
}

// Estimate returns the travel time from one address to another.
func (c *Client) Estimate(ctx context.Context, from, to string) (time.Duration, error) {
	q := url.Values{"from": {from}, "to": {to}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.Base+"/v1/eta?"+q.Encode(), nil)
	if err != nil {
		return 0, err
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return 0, fmt.Errorf("eta: %w", err)
	}
	defer resp.Body.Close()
	var out struct {
		Seconds int `json:"seconds"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return 0, fmt.Errorf("eta: decode: %w", err)
	}
	return time.Duration(out.Seconds) * time.Second, nil
}
