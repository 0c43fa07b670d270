// Package loyaltypoints credits loyalty points for completed store purchases.
package loyaltypoints

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type purchaseCompleted struct {
	MemberID    string `json:"member_id"`
	StoreID     string `json:"store_id"`
	AmountCents int64  `json:"amount_cents"`
}

// Earner credits points per purchase and keeps the member's tier current in
// the CRM database.
type Earner struct {
	crm           *sql.DB
	promoteTier   *sql.Stmt
	pointsPerEuro int64
}

// NewEarner prepares the CRM statements.
func NewEarner(ctx context.Context, crm *sql.DB, pointsPerEuro int64) (*Earner, error) {
	stmt, err := crm.PrepareContext(ctx,
		`UPDATE members SET tier = CASE WHEN lifetime_points + $2 >= 10000 THEN 'gold' ELSE tier END, lifetime_points = lifetime_points + $2 WHERE id = $1`)
	if err != nil {
		return nil, fmt.Errorf("prepare tier update: %w", err)
	}
	return &Earner{crm: crm, promoteTier: stmt, pointsPerEuro: pointsPerEuro}, nil
}

// Handle credits the points of one purchase.
func (e *Earner) Handle(ctx context.Context, msg *consumer.Message) error {
	var p purchaseCompleted
	if err := json.Unmarshal(msg.Body, &p); err != nil {
		return consumer.Permanent(fmt.Errorf("decode purchase: %w", err))
	}
	tx, ok := postgres.Tx(ctx)
	if !ok {
		return fmt.Errorf("loyaltypoints: no claim transaction for %s", msg.ID)
	}
	points := p.AmountCents / 100 * e.pointsPerEuro
	if _, err := tx.Exec(ctx,
		`INSERT INTO points_ledger (member_id, store_id, points, source_message) VALUES ($1, $2, $3, $4)`,
		p.MemberID, p.StoreID, points, msg.ID); err != nil {
		return fmt.Errorf("credit points: %w", err)
	}
	if _, err := e.promoteTier.ExecContext(ctx, p.MemberID, points); err != nil { // want "tier update through a statement prepared on the CRM database handle, outside the claim transaction"
		return fmt.Errorf("update tier: %w", err)
	}
	return nil
}
