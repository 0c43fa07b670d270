package marathon

import (
	"context"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/outbox"
)

type raceClosed struct {
	Race     string `json:"race"`
	Finishes []struct {
		Bib  int           `json:"bib"`
		Chip time.Duration `json:"chip_ns"`
	} `json:"finishes"`
}

type publisher struct {
	cfg Config
	log *slog.Logger
}

// checksum writes the results as the federation's CSV into a scratch file
// and returns the file's SHA-256; the file is removed before returning.
func (p *publisher) checksum(rc raceClosed) (string, error) {
	f, err := os.CreateTemp(p.cfg.ScratchDir, "results-*.csv")
	if err != nil {
		return "", err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	w := csv.NewWriter(f)
	for i, fin := range rc.Finishes {
		if err := w.Write([]string{strconv.Itoa(i + 1), strconv.Itoa(fin.Bib), fin.Chip.String()}); err != nil {
			return "", err
		}
	}
	w.Flush()
	if err := w.Error(); err != nil {
		return "", err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return "", err
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func (p *publisher) raceClosed(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var rc raceClosed
	if err := json.Unmarshal(msg.Body, &rc); err != nil {
		return consumer.Permanent(err)
	}
	sum, err := p.checksum(rc)
	if err != nil {
		return fmt.Errorf("results file: %w", err)
	}
	if _, err := tx.Exec(ctx, `UPDATE races SET official = true, results_sha256 = $2 WHERE id = $1`, rc.Race, sum); err != nil {
		return err
	}
	body, err := json.Marshal(map[string]any{"race": rc.Race, "sha256": sum, "finishers": len(rc.Finishes)})
	if err != nil {
		return err
	}
	p.log.Info("results official", "race", rc.Race, "finishers", len(rc.Finishes))
	return outbox.Send(ctx, tx, p.cfg.ResultsTopic, &consumer.Message{Key: rc.Race, Body: body})
}
