// Package vetclinic files the treatments recorded during a veterinary visit.
package vetclinic

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"

	"heldout4/vetclinic/records"
)

type treatmentRecorded struct {
	VisitID string `json:"visit_id"`
	PetID   string `json:"pet_id"`
	Kind    string `json:"kind"`
	Vaccine string `json:"vaccine"`
	Batch   string `json:"batch"`
	Booster int    `json:"booster_weeks"`
	Drug    string `json:"drug"`
	DoseMg  int    `json:"dose_mg"`
}

// visitWork carries one message's context and transaction through the
// filing steps; it lives only while the message is handled.
type visitWork struct {
	ctx context.Context
	tx  pgx.Tx
	t   treatmentRecorded
}

func (w *visitWork) dispense() error {
	_, err := w.tx.Exec(w.ctx,
		`UPDATE drug_stock SET on_hand_mg = on_hand_mg - $2 WHERE drug = $1`, w.t.Drug, w.t.DoseMg)
	if err != nil {
		return fmt.Errorf("dispense %s: %w", w.t.Drug, err)
	}
	return nil
}

func (w *visitWork) bill(code string) error {
	_, err := w.tx.Exec(w.ctx, `INSERT INTO visit_lines (visit_id, code) VALUES ($1, $2)`, w.t.VisitID, code)
	return err
}

// Filer files treatments.
type Filer struct{}

// Handle files one treatment.
func (Filer) Handle(ctx context.Context, msg *consumer.Message) error {
	var t treatmentRecorded
	if err := json.Unmarshal(msg.Body, &t); err != nil {
		return consumer.Permanent(fmt.Errorf("decode treatment: %w", err))
	}
	tx, ok := postgres.Tx(ctx)
	if !ok {
		return records.ErrNoTx
	}
	w := &visitWork{ctx: ctx, tx: tx, t: t}
	switch t.Kind {
	case "vaccination":
		if err := records.AddVaccination(ctx, t.PetID, t.Vaccine, t.Batch, t.Booster); err != nil {
			return err
		}
		return w.bill("VAC-" + t.Vaccine)
	case "medication":
		if err := w.dispense(); err != nil {
			return err
		}
		return w.bill("MED-" + t.Drug)
	default:
		return consumer.Permanent(fmt.Errorf("unknown treatment kind %q", t.Kind))
	}
}
