// Package warehouse is the client of the warehouse team's reservation API.
package warehouse

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// Item is one line to reserve.
type Item struct {
	SKU string `json:"sku"`
	Qty int    `json:"qty"`
}

// Client talks to the warehouse API.
type Client struct {
	BaseURL string
	HTTP    *http.Client
}

// NewClient returns a Client with a 5 s timeout.
func NewClient(baseURL string) *Client {
	return &Client{BaseURL: baseURL, HTTP: &http.Client{Timeout: 5 * time.Second}}
}

// Reserve reserves items for orderID.
func (c *Client) Reserve(ctx context.Context, orderID string, items []Item) error {
	body, err := json.Marshal(map[string]any{"order_id": orderID, "items": items})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.BaseURL+"/v1/reservations", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return fmt.Errorf("reserve %s: %w", orderID, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		return fmt.Errorf("reserve %s: status %d", orderID, resp.StatusCode)
	}
	return nil
}

// Availability returns the units available for sku.
func (c *Client) Availability(ctx context.Context, sku string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.BaseURL+"/v1/stock/"+sku, nil)
	if err != nil {
		return 0, err
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var out struct {
		Available int `json:"available"`
	}
	err = json.NewDecoder(resp.Body).Decode(&out)
	return out.Available, err
}
