// Package telemedicine closes video consultations and prepares the
// follow-up record.
package telemedicine

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/outbox"
)

type visitEnded struct {
	VisitID     string   `json:"visit_id"`
	PatientID   string   `json:"patient_id"`
	ClinicianID string   `json:"clinician_id"`
	Codes       []string `json:"icd10"`
}

type closer struct{}

func (closer) close(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var v visitEnded
	if err := json.Unmarshal(msg.Body, &v); err != nil {
		return consumer.Permanent(fmt.Errorf("decode visit: %w", err))
	}
	// Look the diagnosis descriptions up side by side: a visit can carry a
	// dozen codes.
	descs := make([]string, len(v.Codes))
	errs := make([]error, len(v.Codes))
	var wg sync.WaitGroup
	for i, code := range v.Codes {
		wg.Add(1)
		go func(i int, code string) { // want "claim transaction shared with goroutines that use it concurrently"
			defer wg.Done()
			errs[i] = tx.QueryRow(ctx, `SELECT description FROM icd10 WHERE code = $1`, code).Scan(&descs[i])
		}(i, code)
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return fmt.Errorf("code %s: %w", v.Codes[i], err)
		}
	}
	if _, err := tx.Exec(ctx,
		`UPDATE visits SET status = 'closed', diagnoses = $2 WHERE id = $1`, v.VisitID, descs); err != nil {
		return fmt.Errorf("close visit: %w", err)
	}
	return outbox.Send(ctx, tx, "billing.visit-billable", &consumer.Message{ID: msg.ID + ":billable", Key: v.PatientID, Body: msg.Body})
}
