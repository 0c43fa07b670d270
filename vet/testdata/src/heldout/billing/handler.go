package billing

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"

	"heldout/billing/internal/invoices"
)

type orderPlaced struct {
	OrderID     string `json:"order_id"`
	CustomerID  string `json:"customer_id"`
	TotalCents  int64  `json:"total_cents"`
	Currency    string `json:"currency"`
	PlacedAtUTC string `json:"placed_at"`
}

func (s *Service) handleOrderPlaced(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var ev orderPlaced
	if err := json.Unmarshal(msg.Body, &ev); err != nil {
		return consumer.Permanent(fmt.Errorf("decode order placed: %w", err))
	}
	if ev.TotalCents == 0 {
		s.log.Info("free order, no invoice", "order", ev.OrderID)
		return nil
	}
	if _, err := tx.Exec(ctx,
		`INSERT INTO billing_accounts (customer_id, currency) VALUES ($1, $2) ON CONFLICT DO NOTHING`,
		ev.CustomerID, ev.Currency); err != nil {
		return fmt.Errorf("ensure account: %w", err)
	}
	inv := invoices.Invoice{
		ID:          "inv-" + ev.OrderID,
		OrderID:     ev.OrderID,
		CustomerID:  ev.CustomerID,
		AmountCents: ev.TotalCents,
		Currency:    ev.Currency,
		IssuedAt:    time.Now().UTC(),
	}
	return s.invoices.Insert(ctx, inv) // want "invoice written through the pool, outside the claim's transaction"
}
