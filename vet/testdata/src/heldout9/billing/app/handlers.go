// Package app holds billing's consumers.
package app

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"

	"heldout9/billing/domain"
	"heldout9/billing/store"
)

// Service turns closed orders into invoices.
type Service struct {
	invoices *store.Repo[domain.Invoice]
	lines    *store.Repo[domain.Line]
}

// NewService builds the repositories over pool.
func NewService(pool *pgxpool.Pool) *Service {
	return &Service{
		invoices: store.NewRepo[domain.Invoice](pool),
		lines:    store.NewRepo[domain.Line](pool),
	}
}

type orderClosed struct {
	OrderID string `json:"order_id"`
	Lines   []struct {
		SKU    string `json:"sku"`
		Amount int64  `json:"amount"`
	} `json:"lines"`
}

func (s *Service) onOrderClosed(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var ev orderClosed
	if err := json.Unmarshal(msg.Body, &ev); err != nil {
		return consumer.Permanent(err)
	}
	inv := domain.Invoice{ID: "inv-" + ev.OrderID, OrderID: ev.OrderID}
	for _, l := range ev.Lines {
		inv.Total += l.Amount
	}
	if err := s.invoices.WithTx(tx).Put(ctx, inv); err != nil {
		return err
	}
	for _, l := range ev.Lines {
		if err := s.lines.Put(ctx, domain.Line{InvoiceID: inv.ID, SKU: l.SKU, Amount: l.Amount}); err != nil { // want "."
			return err
		}
	}
	return nil
}

func (s *Service) onRefund(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var ev struct {
		OrderID string `json:"order_id"`
		Amount  int64  `json:"amount"`
	}
	if err := json.Unmarshal(msg.Body, &ev); err != nil {
		return consumer.Permanent(err)
	}
	return s.invoices.WithTx(tx).Put(ctx, domain.Invoice{ID: "cr-" + msg.ID, OrderID: ev.OrderID, Total: -ev.Amount})
}
