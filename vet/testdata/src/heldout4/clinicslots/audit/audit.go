// Package audit keeps the clinic's access trail required by the privacy office.
package audit

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Recorder appends entries to audit_trail.
type Recorder struct {
	pool *pgxpool.Pool
	now  func() time.Time
}

// NewRecorder returns a Recorder writing through pool.
func NewRecorder(pool *pgxpool.Pool) *Recorder {
	return &Recorder{pool: pool, now: time.Now}
}

// Record appends one entry: who did what to which patient record.
func (r *Recorder) Record(ctx context.Context, actor, action, patientID string) error {
	_, err := r.pool.Exec(ctx,
		`INSERT INTO audit_trail (actor, action, patient_id, at) VALUES ($1, $2, $3, $4)`,
		actor, action, patientID, r.now())
	if err != nil {
		return fmt.Errorf("audit %s: %w", action, err)
	}
	return nil
}
