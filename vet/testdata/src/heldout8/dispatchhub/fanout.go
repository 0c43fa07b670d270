// Package dispatchhub fans partner events out to their webhook subscribers:
// a claimed batch handler turns each event into one outbox row per
// subscriber, and a forwarder posts those rows' messages to the
// subscribers.
package dispatchhub

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/outbox"
)

const deliveries = "webhook.deliveries"

type partnerEvent struct {
	Partner string          `json:"partner"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload"`
}

type delivery struct {
	URL     string          `json:"url"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload"`
}

// Fanout is the batch handler that plans deliveries.
type Fanout struct{}

func (Fanout) subscribers(ctx context.Context, tx pgx.Tx, partner, typ string) ([]string, error) {
	var urls []string
	err := tx.QueryRow(ctx, `SELECT coalesce(array_agg(url), '{}') FROM subscriptions WHERE partner = $1 AND event_type = $2`,
		partner, typ).Scan(&urls)
	return urls, err
}

// Plan queues one delivery per subscriber of every event of the batch.
func (f Fanout) Plan(ctx context.Context, tx pgx.Tx, msgs []*consumer.Message) error {
	var sends []outbox.Outgoing
	for _, m := range msgs {
		var e partnerEvent
		if err := json.Unmarshal(m.Body, &e); err != nil {
			return consumer.Permanent(err)
		}
		urls, err := f.subscribers(ctx, tx, e.Partner, e.Type)
		if err != nil {
			return err
		}
		for _, u := range urls {
			body, err := json.Marshal(delivery{URL: u, Type: e.Type, Payload: e.Payload})
			if err != nil {
				return err
			}
			sends = append(sends, outbox.Outgoing{Destination: deliveries, Message: &consumer.Message{
				ID: m.ID + "/" + u, Key: u, Body: body,
			}})
		}
	}
	return outbox.SendBatch(ctx, tx, sends)
}
