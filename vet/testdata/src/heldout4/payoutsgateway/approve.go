// Package payoutsgateway releases approved merchant payouts at the payment
// service provider.
package payoutsgateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
)

type payoutApproved struct {
	PayoutID   string `json:"payout_id"`
	MerchantID string `json:"merchant_id"`
	Approver   string `json:"approver"`
}

type releaser struct {
	psp *psp
}

func (r *releaser) release(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var ev payoutApproved
	if err := json.Unmarshal(msg.Body, &ev); err != nil {
		return consumer.Permanent(fmt.Errorf("decode approval: %w", err))
	}
	var pspRef string
	if err := tx.QueryRow(ctx,
		`UPDATE payouts SET state = 'released', approved_by = $2 WHERE id = $1 AND state = 'pending' RETURNING psp_reference`,
		ev.PayoutID, ev.Approver).Scan(&pspRef); err != nil {
		return fmt.Errorf("release payout %s: %w", ev.PayoutID, err)
	}
	body, err := json.Marshal(map[string]string{"status": "released"})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, "PATCH", r.psp.base+"/v2/payouts/"+pspRef, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+r.psp.apiKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := r.psp.http.Do(req) // want "payout released at the PSP by an HTTP PATCH inside the claim transaction"
	if err != nil {
		return fmt.Errorf("psp: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		return fmt.Errorf("psp answered %s", resp.Status)
	}
	return nil
}
