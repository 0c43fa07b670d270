// Package payrollexport records which time sheets went into a bank payment
// file, and expires export reservations nobody completed.
package payrollexport

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/outbox"
)

type fileGenerated struct {
	FileID     string   `json:"file_id"`
	Period     string   `json:"period"`
	SheetIDs   []string `json:"sheet_ids"`
	TotalCents int64    `json:"total_cents"`
}

func recordExport(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var f fileGenerated
	if err := json.Unmarshal(msg.Body, &f); err != nil {
		return consumer.Permanent(fmt.Errorf("decode file: %w", err))
	}
	if _, err := tx.Exec(ctx,
		`INSERT INTO payment_files (id, period, total_cents) VALUES ($1, $2, $3)`, f.FileID, f.Period, f.TotalCents); err != nil {
		return fmt.Errorf("record file: %w", err)
	}
	if _, err := tx.Exec(ctx,
		`UPDATE time_sheets SET exported_in = $1, reserved_until = NULL WHERE id = ANY($2)`, f.FileID, f.SheetIDs); err != nil {
		return fmt.Errorf("mark sheets: %w", err)
	}
	return outbox.Send(ctx, tx, "finance.payment-file-ready", &consumer.Message{ID: "ready:" + f.FileID, Key: f.Period, Body: msg.Body})
}
