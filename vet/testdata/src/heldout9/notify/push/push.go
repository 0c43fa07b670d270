// Package push sends notifications to the push provider.
package push

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
)

// Sender posts to the push provider.
type Sender struct {
	Endpoint string
	HC       *http.Client
}

// Send delivers text to user; key is the provider's idempotency key.
func (s *Sender) Send(ctx context.Context, key, user, text string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.Endpoint, bytes.NewBufferString(fmt.Sprintf(`{"user":%q,"text":%q}`, user, text)))
	if err != nil {
		return err
	}
	req.Header.Set("Idempotency-Key", key)
	resp, err := s.HC.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		return fmt.Errorf("push: %s", resp.Status)
	}
	return nil
}
