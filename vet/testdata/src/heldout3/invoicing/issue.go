package invoicing

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"heldout3/invoicing/events"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
)

type orderShipped struct {
	OrderID    string `json:"order_id"`
	CustomerID string `json:"customer_id"`
	TotalCents int64  `json:"total_cents"`
	Currency   string `json:"currency"`
}

type invoiceIssued struct {
	InvoiceNo  string    `json:"invoice_no"`
	OrderID    string    `json:"order_id"`
	CustomerID string    `json:"customer_id"`
	TotalCents int64     `json:"total_cents"`
	Currency   string    `json:"currency"`
	DueOn      time.Time `json:"due_on"`
}

type issuer struct {
	terms time.Duration
	now   func() time.Time
}

func (i *issuer) onOrderShipped(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var o orderShipped
	if err := json.Unmarshal(msg.Body, &o); err != nil {
		return consumer.Permanent(err)
	}
	var no string
	if err := tx.QueryRow(ctx, `INSERT INTO invoices (order_id, customer_id, total_cents, currency)
		VALUES ($1, $2, $3, $4) RETURNING number`, o.OrderID, o.CustomerID, o.TotalCents, o.Currency).Scan(&no); err != nil {
		return fmt.Errorf("invoicing: issue for %s: %w", o.OrderID, err)
	}
	return events.Emit(ctx, tx, events.InvoiceIssued, o.CustomerID, invoiceIssued{
		InvoiceNo: no, OrderID: o.OrderID, CustomerID: o.CustomerID,
		TotalCents: o.TotalCents, Currency: o.Currency, DueOn: i.now().Add(i.terms),
	})
}
