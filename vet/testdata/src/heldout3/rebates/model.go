package rebates

import "time"

type claimApproved struct {
	ClaimID     string    `json:"claim_id"`
	CustomerID  string    `json:"customer_id"`
	AmountCents int64     `json:"amount_cents"`
	ApprovedAt  time.Time `json:"approved_at"`
}

// credit is one store-credit grant.
type credit struct {
	ClaimID     string
	CustomerID  string
	AmountCents int64
	GrantedAt   time.Time
}

func (credit) Table() string { return "store_credits" }
func (credit) Columns() []string {
	return []string{"claim_id", "customer_id", "amount_cents", "granted_at"}
}
func (c credit) Values() []any { return []any{c.ClaimID, c.CustomerID, c.AmountCents, c.GrantedAt} }
