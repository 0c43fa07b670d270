// Package notify is a team's client of the notification service: a thin
// wrapper over net/http.
package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
)

// Client calls the notification service.
type Client struct {
	HTTP *http.Client
	Base string
}

// Push sends a push notification to user.
func (c *Client) Push(ctx context.Context, user, text string) error {
	return c.post(ctx, "/push", map[string]string{"user": user, "text": text})
}

// Preferences reads user's notification settings.
func (c *Client) Preferences(ctx context.Context, user string) (map[string]bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.Base+"/prefs/"+user, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.HTTP.Get(req.URL.String())
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var prefs map[string]bool
	return prefs, json.NewDecoder(resp.Body).Decode(&prefs)
}

func (c *Client) post(ctx context.Context, path string, body any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.Base+path, bytes.NewReader(b))
	if err != nil {
		return err
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		return fmt.Errorf("notify: %s", resp.Status)
	}
	return nil
}
