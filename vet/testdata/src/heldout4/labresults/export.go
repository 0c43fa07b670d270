// Package labresults files verified lab results and hands them to the
// hospital information system, which picks up HL7 files from a spool
// directory.
package labresults

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
)

type resultVerified struct {
	OrderID   string    `json:"order_id"`
	PatientID string    `json:"patient_id"`
	Code      string    `json:"loinc"`
	Value     string    `json:"value"`
	Unit      string    `json:"unit"`
	At        time.Time `json:"verified_at"`
}

// Filer stores results and exports them as HL7 ORU messages.
type Filer struct {
	SpoolDir string
	Facility string
}

func (f *Filer) file(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var r resultVerified
	if err := json.Unmarshal(msg.Body, &r); err != nil {
		return consumer.Permanent(fmt.Errorf("decode result: %w", err))
	}
	if _, err := tx.Exec(ctx,
		`INSERT INTO lab_results (order_id, patient_id, loinc, value, unit, verified_at) VALUES ($1, $2, $3, $4, $5, $6)`,
		r.OrderID, r.PatientID, r.Code, r.Value, r.Unit, r.At); err != nil {
		return fmt.Errorf("store result: %w", err)
	}
	if _, err := tx.Exec(ctx, `UPDATE lab_orders SET status = 'resulted' WHERE id = $1`, r.OrderID); err != nil {
		return fmt.Errorf("close order: %w", err)
	}
	name := filepath.Join(f.SpoolDir, r.OrderID+"-"+msg.ID+".hl7")
	return os.WriteFile(name, f.oru(r), 0o640) // want "HL7 file written to the spool directory inside the claim transaction"
}

func (f *Filer) oru(r resultVerified) []byte {
	segs := []string{
		"MSH|^~\\&|LAB|" + f.Facility + "|HIS|" + f.Facility + "|" + r.At.Format("20060102150405") + "||ORU^R01|" + r.OrderID + "|P|2.5",
		"PID|1||" + r.PatientID,
		"OBR|1|" + r.OrderID,
		"OBX|1|ST|" + r.Code + "||" + r.Value + "|" + r.Unit,
	}
	return []byte(strings.Join(segs, "\r") + "\r")
}
