// Package reportjobs files court reports and purges expired drafts.
package reportjobs

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
)

type filed struct {
	CaseID   string `json:"case_id"`
	ReportID string `json:"report_id"`
}

// Filer records filed reports.
type Filer struct{}

func (Filer) onFiled(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var f filed
	if err := json.Unmarshal(msg.Body, &f); err != nil {
		return consumer.Permanent(err)
	}
	_, err := tx.Exec(ctx, `UPDATE reports SET status = 'filed' WHERE id = $1 AND case_id = $2`, f.ReportID, f.CaseID)
	return err
}
