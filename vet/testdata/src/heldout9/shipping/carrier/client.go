// Package carrier is the client of the parcel carrier's booking API.
package carrier

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
)

// Client books pickups with the carrier.
type Client struct {
	base string
	hc   *http.Client
}

// New returns a client for the API at base.
func New(base string, hc *http.Client) *Client { return &Client{base: base, hc: hc} }

// Booking is a pickup request.
type Booking struct {
	Reference string `json:"reference"`
	Address   string `json:"address"`
	Parcels   int    `json:"parcels"`
}

// Book requests a pickup and returns the carrier's tracking number.
func (c *Client) Book(ctx context.Context, b Booking) (string, error) {
	body, err := json.Marshal(b)
	if err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+"/v2/pickups", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		return "", fmt.Errorf("carrier: %s", resp.Status)
	}
	var out struct {
		Tracking string `json:"tracking"`
	}
	return out.Tracking, json.NewDecoder(resp.Body).Decode(&out)
}
