// Package quarry files blast logs from the drill rigs with their compressed
// hole-by-hole report, for the mining inspectorate.
package quarry

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
)

type hole struct {
	ID       string  `json:"id"`
	DepthM   float64 `json:"depth_m"`
	ChargeKg float64 `json:"charge_kg"`
	DelayMs  int     `json:"delay_ms"`
}

type blast struct {
	BlastID string `json:"blast_id"`
	Bench   string `json:"bench"`
	Holes   []hole `json:"holes"`
}

func (b blast) totalCharge() float64 {
	var kg float64
	for _, h := range b.Holes {
		kg += h.ChargeKg
	}
	return kg
}

// Registry is the blast log handler.
type Registry struct {
	log       *slog.Logger
	maxCharge float64
}

func newRegistry(maxCharge float64) *Registry {
	return &Registry{log: slog.New(slog.NewTextHandler(os.Stderr, nil)), maxCharge: maxCharge}
}

// File records the blast and its report in the claim's transaction.
func (r *Registry) File(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var b blast
	if err := json.Unmarshal(msg.Body, &b); err != nil {
		return consumer.Permanent(err)
	}
	if kg := b.totalCharge(); kg > r.maxCharge {
		return consumer.Permanent(fmt.Errorf("blast %s: %.0f kg over the permit's %.0f kg", b.BlastID, kg, r.maxCharge))
	}
	rep, err := spoolReport(b)
	if err != nil {
		return err
	}
	r.log.InfoContext(ctx, "blast report", "blast", b.BlastID, "bytes", len(rep.data), "sha256", rep.checksum)
	_, err = tx.Exec(ctx, `INSERT INTO blasts (id, bench, holes, charge_kg, report_gz, report_sha256) VALUES ($1, $2, $3, $4, $5, $6)`,
		b.BlastID, b.Bench, len(b.Holes), b.totalCharge(), rep.data, rep.checksum)
	return err
}
