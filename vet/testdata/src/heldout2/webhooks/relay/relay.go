// Package relay delivers webhooks that handlers queued in the outbox.
package relay

import (
	"bytes"
	"context"
	"fmt"
	"net/http"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
)

// Deliverer POSTs each queued webhook to the URL in its "url" header.
type Deliverer struct {
	Client *http.Client
}

// Handle sends one webhook; receivers deduplicate on the Webhook-Id header.
func (d *Deliverer) Handle(ctx context.Context, msg *consumer.Message) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, msg.Headers["url"], bytes.NewReader(msg.Body))
	if err != nil {
		return consumer.Permanent(err)
	}
	req.Header.Set("Webhook-Id", msg.ID)
	resp, err := d.Client.Do(req)
	if err != nil {
		return fmt.Errorf("deliver %s: %w", msg.ID, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 500 {
		return fmt.Errorf("deliver %s: status %d", msg.ID, resp.StatusCode)
	}
	return nil
}

// Run delivers what the outbox relay published to "webhooks.out".
func Run(ctx context.Context, broker adapters.Broker) error {
	src, err := broker.Source(ctx, "webhooks.out", "webhook-deliverer")
	if err != nil {
		return err
	}
	cfg := consumer.Config{
		Name:       "webhook-deliverer",
		Duplicates: consumer.AllowDuplicates("receivers deduplicate on Webhook-Id"),
	}
	c, err := consumer.New(src, &Deliverer{Client: http.DefaultClient}, cfg, middleware.Logging())
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
