// Package ticketing issues tickets for paid event orders.
package ticketing

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/segmentio/kafka-go"
)

type orderPaid struct {
	OrderID string   `json:"order_id"`
	EventID string   `json:"event_id"`
	Seats   []string `json:"seats"`
}

// Issuer turns paid orders into tickets.
type Issuer struct {
	Issued *kafka.Writer // topic tickets.issued, read by the wallet-pass service
}

func (is *Issuer) issue(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var o orderPaid
	if err := json.Unmarshal(msg.Body, &o); err != nil {
		return consumer.Permanent(err)
	}
	out := make([]kafka.Message, 0, len(o.Seats))
	for _, seat := range o.Seats {
		if _, err := tx.Exec(ctx, `INSERT INTO tickets (order_id, event_id, seat) VALUES ($1, $2, $3)`, o.OrderID, o.EventID, seat); err != nil {
			return err
		}
		out = append(out, kafka.Message{Key: []byte(o.OrderID), Value: []byte(seat)})
	}
	return is.Issued.WriteMessages(ctx, out...) // want "broker publish inside transactional handler"
}
