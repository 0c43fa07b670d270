// Package audit writes the compliance audit log kept in the HR database.
package audit

import (
	"context"
	"database/sql"
	"fmt"
)

// Recorder appends entries to audit_log.
type Recorder struct {
	db *sql.DB
}

// NewRecorder returns a Recorder writing through db.
func NewRecorder(db *sql.DB) *Recorder {
	return &Recorder{db: db}
}

// Record appends one entry: actor did action on subject.
func (r *Recorder) Record(ctx context.Context, actor, action, subject string) error {
	_, err := r.db.ExecContext(ctx,
		`INSERT INTO audit_log (actor, action, subject, recorded_at) VALUES ($1, $2, $3, now())`,
		actor, action, subject)
	if err != nil {
		return fmt.Errorf("audit: record %s on %s: %w", action, subject, err)
	}
	return nil
}
