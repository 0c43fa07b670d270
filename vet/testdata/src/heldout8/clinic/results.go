// Package clinic files laboratory results and tells the ordering practice.
package clinic

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"

	"heldout8/clinic/ports"
)

// ResultFiler is the use case "file a lab result".
type ResultFiler struct {
	practices ports.PracticeNotifier
}

// NewResultFiler returns a filer telling practices through n.
func NewResultFiler(n ports.PracticeNotifier) *ResultFiler {
	return &ResultFiler{practices: n}
}

func (f *ResultFiler) parse(msg *consumer.Message) (ports.LabResult, error) {
	var r ports.LabResult
	if err := json.Unmarshal(msg.Body, &r); err != nil {
		return r, consumer.Permanent(err)
	}
	return r, nil
}

func (f *ResultFiler) practiceOf(ctx context.Context, tx pgx.Tx, orderID string) (string, error) {
	var practice string
	err := tx.QueryRow(ctx, `SELECT practice_id FROM lab_orders WHERE id = $1`, orderID).Scan(&practice)
	return practice, err
}

func (f *ResultFiler) store(ctx context.Context, tx pgx.Tx, r ports.LabResult) error {
	_, err := tx.Exec(ctx, `INSERT INTO lab_results (order_id, patient_id, code, value, abnormal) VALUES ($1, $2, $3, $4, $5)`,
		r.OrderID, r.PatientID, r.Code, r.Value, r.Abnormal)
	return err
}

// File is the handler.
func (f *ResultFiler) File(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	r, err := f.parse(msg)
	if err != nil {
		return err
	}
	practice, err := f.practiceOf(ctx, tx, r.OrderID)
	if err != nil {
		return err
	}
	if err := f.store(ctx, tx, r); err != nil {
		return err
	}
	if !r.Abnormal {
		return nil
	}
	return f.practices.ResultReady(ctx, practice, r) // want "webhook posted inside the transaction"
}
