package pottery

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/oncely/oncely/consumer"
)

// webhook posts confirmations the relay published to the booking site. It
// runs after the booking committed, outside any transaction, and sends the
// message ID as the idempotency key.
type webhook struct {
	url    string
	client *http.Client
	log    *slog.Logger
}

func (w *webhook) Handle(ctx context.Context, msg *consumer.Message) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url, bytes.NewReader(msg.Body))
	if err != nil {
		return consumer.Permanent(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", msg.ID)
	resp, err := w.client.Do(req)
	if err != nil {
		return fmt.Errorf("webhook: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 500 {
		return fmt.Errorf("webhook: %s", resp.Status)
	}
	if resp.StatusCode >= 400 {
		w.log.Error("webhook refused confirmation", "id", msg.ID, "status", resp.Status)
		return consumer.Permanent(fmt.Errorf("webhook: %s", resp.Status))
	}
	return nil
}
