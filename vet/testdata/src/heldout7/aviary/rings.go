package aviary

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"golang.org/x/sync/errgroup"
)

type ring struct {
	Code    string  `json:"code"`
	Species string  `json:"species"`
	WingMm  float64 `json:"wing_mm"`
	Site    string  `json:"site"`
}

// validCode checks a ring code's check letter: the letters' positions
// summed modulo 26.
func validCode(code string) bool {
	if len(code) < 3 {
		return false
	}
	sum := 0
	for _, r := range strings.ToUpper(code[:len(code)-1]) {
		sum += int(r)
	}
	return rune('A'+sum%26) == rune(strings.ToUpper(code)[len(code)-1])
}

func (r *Ringers) book(ctx context.Context, tx pgx.Tx, msgs []*consumer.Message) error {
	rings := make([]ring, len(msgs))
	g, gctx := errgroup.WithContext(ctx)
	sem := make(chan struct{}, r.workers)
	for i, m := range msgs {
		g.Go(func() error {
			sem <- struct{}{}
			defer func() { <-sem }()
			if err := gctx.Err(); err != nil {
				return err
			}
			if err := json.Unmarshal(m.Body, &rings[i]); err != nil {
				return consumer.Permanent(fmt.Errorf("ring record %s: %w", m.ID, err))
			}
			if !validCode(rings[i].Code) {
				return consumer.Permanent(fmt.Errorf("ring record %s: bad check letter in %q", m.ID, rings[i].Code))
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	b := &pgx.Batch{}
	for _, rg := range rings {
		b.Queue(`INSERT INTO ringings (code, species, wing_mm, site) VALUES ($1, $2, $3, $4)`, rg.Code, rg.Species, rg.WingMm, rg.Site)
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("book rings: %w", err)
	}
	r.log.Debug("rings booked", "count", len(rings))
	return nil
}
