// Package kycreview applies compliance officers' KYC review outcomes.
package kycreview

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/outbox"

	"heldout4/kycreview/customers"
)

type reviewCompleted struct {
	CustomerID string `json:"customer_id"`
	Outcome    string `json:"outcome"`
	Officer    string `json:"officer"`
}

// Reviews applies review outcomes.
type Reviews struct {
	customers *customers.Repo
}

func (h *Reviews) apply(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var ev reviewCompleted
	if err := json.Unmarshal(msg.Body, &ev); err != nil {
		return consumer.Permanent(fmt.Errorf("decode review: %w", err))
	}
	repo := h.customers.WithTx(tx)
	if err := repo.SetKYCStatus(ctx, ev.CustomerID, ev.Outcome, ev.Officer); err != nil {
		return err
	}
	if ev.Outcome != "rejected" {
		return nil
	}
	lvl, err := repo.RiskLevel(ctx, ev.CustomerID)
	if err != nil {
		return err
	}
	if lvl == "high" {
		if err := repo.Freeze(ctx, ev.CustomerID, "kyc rejected"); err != nil {
			return err
		}
	}
	return outbox.Send(ctx, tx, "compliance.customer-rejected", &consumer.Message{ID: msg.ID + ":rejected", Key: ev.CustomerID, Body: msg.Body})
}
