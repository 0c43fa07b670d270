package quotes

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/segmentio/kafka-go"
)

type quoteAccepted struct {
	QuoteID    string `json:"quote_id"`
	CustomerID string `json:"customer_id"`
	TotalCents int64  `json:"total_cents"`
}

type orderRequested struct {
	QuoteID    string `json:"quote_id"`
	CustomerID string `json:"customer_id"`
	TotalCents int64  `json:"total_cents"`
}

type service struct {
	orders *kafka.Writer
}

func (s *service) onQuoteAccepted(ctx context.Context, tx pgx.Tx, q quoteAccepted) error {
	if _, err := tx.Exec(ctx, `UPDATE quotes SET status = 'accepted' WHERE id = $1 AND status = 'open'`, q.QuoteID); err != nil {
		return fmt.Errorf("quotes: accept %s: %w", q.QuoteID, err)
	}
	body, err := json.Marshal(orderRequested(q))
	if err != nil {
		return err
	}
	return s.orders.WriteMessages(ctx, kafka.Message{Key: []byte(q.QuoteID), Value: body}) // want "order request produced to Kafka inside the transactional handler; use the outbox"
}
