// Package valves talks to the field valve controllers.
package valves

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
)

// Client drives valve controllers over HTTP.
type Client struct {
	BaseURL string
	HTTP    *http.Client
}

// Open opens a valve for the given number of minutes.
func (c *Client) Open(ctx context.Context, valveID string, minutes int) error {
	body, _ := json.Marshal(map[string]any{"minutes": minutes})
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, fmt.Sprintf("%s/valves/%s/open", c.BaseURL, valveID), bytes.NewReader(body))
	if err != nil {
		return err
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		return fmt.Errorf("valve %s: %s", valveID, resp.Status)
	}
	return nil
}
