// Package provider is the client of the e-mail provider's HTTP API.
package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
)

// Client sends e-mail through the provider.
type Client struct {
	Endpoint string
	Key      string
	HC       *http.Client
}

// Email is one message to send.
type Email struct {
	To       string `json:"to"`
	Template string `json:"template"`
}

// Send sends e; the provider drops a second send with the same dedupe key.
func (c *Client) Send(ctx context.Context, dedupeKey string, e Email) error {
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.Endpoint+"/send", bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.Key)
	req.Header.Set("X-Dedupe-Key", dedupeKey)
	resp, err := c.HC.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		return fmt.Errorf("provider: %s", resp.Status)
	}
	return nil
}
