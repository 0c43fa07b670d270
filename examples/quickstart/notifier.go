package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/oncely/oncely/consumer"
)

// notifier is the downstream consumer of the ledger's events: it "sends" one
// notification per event. It runs behind its own idempotency claims (those of
// consumer "notifier"), so an event the relay published twice notifies once.
type notifier struct {
	mu   sync.Mutex
	sent map[string]int    // notifications per event ID
	text map[string]string // what the notification said, per event ID
}

func newNotifier() *notifier {
	return &notifier{sent: map[string]int{}, text: map[string]string{}}
}

// Handle notifies the account holder of one applied payment.
func (n *notifier) Handle(_ context.Context, msg *consumer.Message) error {
	var ev applied
	if err := json.Unmarshal(msg.Body, &ev); err != nil {
		return consumer.Permanent(fmt.Errorf("decoding event: %w", err))
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.sent[msg.ID]++
	n.text[msg.ID] = fmt.Sprintf("%s %+d", ev.Account, ev.AmountCents)
	return nil
}
