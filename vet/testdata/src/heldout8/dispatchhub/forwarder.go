package dispatchhub

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/oncely/oncely/consumer"
)

// Forwarder posts planned deliveries. It runs with duplicates allowed: the
// message ID travels as the Idempotency-Key header and the subscribers'
// contract is to drop a key they have seen.
type Forwarder struct {
	client *http.Client
}

// Handle posts one delivery.
func (f *Forwarder) Handle(ctx context.Context, msg *consumer.Message) error {
	var d delivery
	if err := json.Unmarshal(msg.Body, &d); err != nil {
		return consumer.Permanent(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.URL, bytes.NewReader(d.Payload))
	if err != nil {
		return consumer.Permanent(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", msg.ID)
	req.Header.Set("X-Event-Type", d.Type)
	resp, err := f.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests:
		return fmt.Errorf("%s: %s", d.URL, resp.Status)
	case resp.StatusCode >= 400:
		return consumer.Permanent(fmt.Errorf("%s refused the delivery: %s", d.URL, resp.Status))
	}
	return nil
}

func newForwarder() *Forwarder {
	return &Forwarder{client: &http.Client{Timeout: 15 * time.Second}}
}
