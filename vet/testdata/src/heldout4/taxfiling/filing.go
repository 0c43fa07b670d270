// Package taxfiling books quarterly VAT returns prepared by the accounting
// engine for small-business customers.
package taxfiling

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/outbox"
)

type returnPrepared struct {
	ReturnID    string           `json:"return_id"`
	CompanyID   string           `json:"company_id"`
	Quarter     string           `json:"quarter"`
	Boxes       map[string]int64 `json:"boxes"`
	Adjustments []adjustment     `json:"adjustments"`
}

type adjustment struct {
	InvoiceID  string `json:"invoice_id"`
	DeltaCents int64  `json:"delta_cents"`
}

type booker struct{}

func (booker) book(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var r returnPrepared
	if err := json.Unmarshal(msg.Body, &r); err != nil {
		return consumer.Permanent(fmt.Errorf("decode return: %w", err))
	}
	boxes, err := json.Marshal(r.Boxes)
	if err != nil {
		return err
	}
	if _, err := tx.Exec(ctx,
		`INSERT INTO vat_returns (id, company_id, quarter, boxes, state) VALUES ($1, $2, $3, $4, 'booked')`,
		r.ReturnID, r.CompanyID, r.Quarter, boxes); err != nil {
		return fmt.Errorf("book return: %w", err)
	}
	// Adjustments of invoices that were deleted meanwhile are skipped, not
	// fatal: each runs in a savepoint of the claim's transaction.
	skipped := 0
	for _, adj := range r.Adjustments {
		err := pgx.BeginFunc(ctx, tx, func(sp pgx.Tx) error {
			_, err := sp.Exec(ctx, `UPDATE invoices SET vat_adjust_cents = vat_adjust_cents + $2, vat_return_id = $3 WHERE id = $1`,
				adj.InvoiceID, adj.DeltaCents, r.ReturnID)
			return err
		})
		if err != nil {
			skipped++
		}
	}
	body, err := json.Marshal(map[string]any{"return_id": r.ReturnID, "skipped_adjustments": skipped})
	if err != nil {
		return err
	}
	return outbox.Send(ctx, tx, "tax.return-ready-to-submit", &consumer.Message{ID: msg.ID + ":submit", Key: r.CompanyID, Body: body})
}
