// Package webhook notifies practices through their registered webhook.
package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"heldout8/clinic/ports"
)

// Notifier posts results to https://<practice>.practices.example/hooks/results.
type Notifier struct {
	client *http.Client
	domain string
}

// New returns a notifier using client.
func New(client *http.Client, domain string) *Notifier {
	return &Notifier{client: client, domain: domain}
}

// ResultReady posts r to the practice's hook.
func (n *Notifier) ResultReady(ctx context.Context, practiceID string, r ports.LabResult) error {
	body, err := json.Marshal(r)
	if err != nil {
		return err
	}
	url := fmt.Sprintf("https://%s.%s/hooks/results", practiceID, n.domain)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := n.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		return fmt.Errorf("practice %s: webhook answered %s", practiceID, resp.Status)
	}
	return nil
}
