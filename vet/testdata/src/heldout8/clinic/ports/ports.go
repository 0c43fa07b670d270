// Package ports declares what the clinic's application needs from the
// outside world.
package ports

import "context"

// LabResult is a finished laboratory result.
type LabResult struct {
	OrderID   string `json:"order_id"`
	PatientID string `json:"patient_id"`
	Code      string `json:"code"`
	Value     string `json:"value"`
	Abnormal  bool   `json:"abnormal"`
}

// PracticeNotifier tells the ordering practice that a result is in.
type PracticeNotifier interface {
	ResultReady(ctx context.Context, practiceID string, r LabResult) error
}
