// Package exports mirrors customer records into the CRM partner's API. The
// partner's PUT is an upsert keyed by customer ID, so a redelivered message
// writes the same record again.
package exports

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
)

// CRM is the partner API client.
type CRM struct {
	base   string
	token  string
	client *http.Client
}

type customerUpdated struct {
	CustomerID string `json:"customer_id"`
	Name       string `json:"name"`
	Email      string `json:"email"`
	Segment    string `json:"segment"`
}

func (c *CRM) upsert(ctx context.Context, msg *consumer.Message) error {
	var ev customerUpdated
	if err := json.Unmarshal(msg.Body, &ev); err != nil {
		return consumer.Permanent(err)
	}
	body, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, c.base+"/contacts/"+ev.CustomerID, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := c.client.Do(req)
	if err != nil {
		return fmt.Errorf("crm upsert %s: %w", ev.CustomerID, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 500 {
		return fmt.Errorf("crm upsert %s: status %d", ev.CustomerID, resp.StatusCode)
	}
	if resp.StatusCode >= 400 {
		return consumer.Permanent(fmt.Errorf("crm upsert %s: status %d", ev.CustomerID, resp.StatusCode))
	}
	return nil
}

// Run consumes customers.updated.
func Run(ctx context.Context, broker adapters.Broker, crmURL, token string) error {
	src, err := broker.Source(ctx, "customers.updated", "crm-export")
	if err != nil {
		return err
	}
	crm := &CRM{base: crmURL, token: token, client: &http.Client{Timeout: 10 * time.Second}}
	c, err := consumer.New(src, consumer.HandlerFunc(crm.upsert), consumer.Config{
		Name:       "crm-export",
		Duplicates: consumer.AllowDuplicates("CRM PUT /contacts/{id} is an upsert keyed by customer ID"),
	}, middleware.Logging())
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
