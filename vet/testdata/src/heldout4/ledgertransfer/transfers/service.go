// Package transfers moves money between customer accounts.
package transfers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/outbox"

	"heldout4/ledgertransfer/ledger"
)

// Transfer is a requested movement between two accounts.
type Transfer struct {
	ID          string `json:"id"`
	From        string `json:"from"`
	To          string `json:"to"`
	AmountMinor int64  `json:"amount_minor"`
	Currency    string `json:"currency"`
}

// Service books transfers.
type Service struct {
	Ledger ledger.Repo
}

// Book books t on tx and announces the result through the outbox.
func (s *Service) Book(ctx context.Context, tx pgx.Tx, t Transfer) error {
	err := ledger.WithSavepoint(ctx, tx, func(sp pgx.Tx) error {
		bal, overdraft, err := s.Ledger.Balance(ctx, sp, t.From)
		if err != nil {
			return err
		}
		if bal+overdraft < t.AmountMinor {
			return ledger.ErrInsufficientFunds
		}
		return s.Ledger.Post(ctx, sp, t.ID, []ledger.Entry{
			{Account: t.From, AmountMinor: -t.AmountMinor, Currency: t.Currency},
			{Account: t.To, AmountMinor: t.AmountMinor, Currency: t.Currency},
		})
	})
	event := "transfer.booked"
	if errors.Is(err, ledger.ErrInsufficientFunds) {
		event = "transfer.rejected"
	} else if err != nil {
		return fmt.Errorf("book %s: %w", t.ID, err)
	}
	body, err := json.Marshal(t)
	if err != nil {
		return err
	}
	return outbox.Send(ctx, tx, "payments."+event, &consumer.Message{ID: t.ID + ":" + event, Key: t.From, Body: body})
}
