// Package templates fetches rendered notification templates.
package templates

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
)

// Client reads templates from the template service.
type Client struct {
	Base string
	HC   *http.Client
}

// Render returns the template name rendered for locale.
func (c *Client) Render(ctx context.Context, name, locale string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.Base+"/templates/"+url.PathEscape(name)+"?locale="+url.QueryEscape(locale), nil)
	if err != nil {
		return "", err
	}
	resp, err := c.HC.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var out struct {
		Text string `json:"text"`
	}
	return out.Text, json.NewDecoder(resp.Body).Decode(&out)
}
