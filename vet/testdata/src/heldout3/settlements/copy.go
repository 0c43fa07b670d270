package settlements

import "time"

// payoutRows feeds CopyFrom from decoded payouts.
type payoutRows struct {
	rows []payout
	i    int
}

type payout struct {
	SettlementID string    `json:"settlement_id"`
	MerchantID   string    `json:"merchant_id"`
	AmountCents  int64     `json:"amount_cents"`
	FeeCents     int64     `json:"fee_cents"`
	ValueDate    time.Time `json:"value_date"`
}

func (r *payoutRows) Next() bool {
	r.i++
	return r.i <= len(r.rows)
}

func (r *payoutRows) Values() []any {
	p := r.rows[r.i-1]
	return []any{p.SettlementID, p.MerchantID, p.AmountCents, p.FeeCents, p.ValueDate}
}
