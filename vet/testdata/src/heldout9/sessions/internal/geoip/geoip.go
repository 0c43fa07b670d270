// Package geoip looks addresses up in the geo-IP service.
package geoip

import (
	"context"
	"encoding/json"
	"net/http"
)

// Client reads locations.
type Client struct {
	Base string
	HC   *http.Client
}

// Country returns the country of ip.
func (c *Client) Country(ctx context.Context, ip string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.Base+"/lookup/"+ip, nil)
	if err != nil {
		return "", err
	}
	resp, err := c.HC.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var out struct {
		Country string `json:"country"`
	}
	return out.Country, json.NewDecoder(resp.Body).Decode(&out)
}
