// Package moderation asks the trust-and-safety service for a verdict on
// user text.
package moderation

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
)

// Verdict is the service's answer.
type Verdict struct {
	Allowed bool     `json:"allowed"`
	Labels  []string `json:"labels"`
}

// Client queries the moderation service.
type Client struct {
	BaseURL string
	HTTP    *http.Client
}

// Check returns the verdict for text. It only reads: the service keeps no
// state per call.
func (c *Client) Check(ctx context.Context, text string) (Verdict, error) {
	u := c.BaseURL + "/v1/verdict?text=" + url.QueryEscape(text)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return Verdict{}, err
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return Verdict{}, fmt.Errorf("moderation: check: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Verdict{}, fmt.Errorf("moderation: check: status %d", resp.StatusCode)
	}
	var v Verdict
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		return Verdict{}, fmt.Errorf("moderation: decode verdict: %w", err)
	}
	return v, nil
}
