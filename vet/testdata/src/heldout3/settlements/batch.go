package settlements

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
)

var payoutColumns = []string{"settlement_id", "merchant_id", "amount_cents", "fee_cents", "value_date"}

// applyBatch stores a batch of settled payouts with set-based statements in
// the batch's claim transaction.
func applyBatch(ctx context.Context, tx pgx.Tx, msgs []*consumer.Message) error {
	rows := make([]payout, 0, len(msgs))
	for _, m := range msgs {
		var p payout
		if err := json.Unmarshal(m.Body, &p); err != nil {
			return consumer.Permanent(fmt.Errorf("settlements: decode %s: %w", m.ID, err))
		}
		rows = append(rows, p)
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"payouts"}, payoutColumns, &payoutRows{rows: rows}); err != nil {
		return fmt.Errorf("settlements: copy payouts: %w", err)
	}
	b := &pgx.Batch{}
	for _, p := range rows {
		b.Queue(`UPDATE merchant_balances SET pending_cents = pending_cents - $2 WHERE merchant_id = $1`, p.MerchantID, p.AmountCents+p.FeeCents)
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("settlements: balances: %w", err)
	}
	return recordFees(ctx, tx, rows)
}

// recordFees books the fees in a savepoint: a merchant without a fee account
// yet skips the fee lines instead of failing the batch.
func recordFees(ctx context.Context, tx pgx.Tx, rows []payout) error {
	sp, err := tx.Begin(ctx)
	if err != nil {
		return err
	}
	for _, p := range rows {
		if p.FeeCents == 0 {
			continue
		}
		if _, err := sp.Exec(ctx, `INSERT INTO fee_lines (settlement_id, merchant_id, cents) VALUES ($1, $2, $3)`,
			p.SettlementID, p.MerchantID, p.FeeCents); err != nil {
			return sp.Rollback(ctx)
		}
	}
	return sp.Commit(ctx)
}
