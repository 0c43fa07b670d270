// Package telbilling rates call detail records into invoices.
package telbilling

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"

	"heldout6/telbilling/usage"
)

type cdr struct {
	MSISDN  string `json:"msisdn"`
	Seconds int64  `json:"seconds"`
}

// Rater rates one CDR per message.
type Rater struct {
	Usage *usage.Repo
}

func (r *Rater) rate(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var c cdr
	if err := json.Unmarshal(msg.Body, &c); err != nil {
		return consumer.Permanent(err)
	}
	plan, err := r.Usage.Plan(ctx, c.MSISDN)
	if err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO invoice_lines (msisdn, plan, seconds) VALUES ($1, $2, $3)`, c.MSISDN, plan, c.Seconds); err != nil {
		return err
	}
	return r.Usage.Record(ctx, c.MSISDN, c.Seconds)
}
