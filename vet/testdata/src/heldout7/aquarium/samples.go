package aquarium

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
)

type sample struct {
	Tank     string  `json:"tank"`
	Nitrate  float64 `json:"nitrate_ppm"`
	PH       float64 `json:"ph"`
	DosedMl  float64 `json:"dosed_ml"`
	Operator string  `json:"operator"`
}

type sampleHandler struct {
	pool *pgxpool.Pool
	log  *slog.Logger
}

// Handle records the sample and adds its dose to the tank's weekly total.
func (h *sampleHandler) Handle(ctx context.Context, msg *consumer.Message) error {
	var s sample
	if err := json.Unmarshal(msg.Body, &s); err != nil {
		return consumer.Permanent(fmt.Errorf("sample %s: %w", msg.ID, err))
	}
	tx, err := h.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `INSERT INTO samples (tank, nitrate_ppm, ph, operator) VALUES ($1, $2, $3, $4)`,
		s.Tank, s.Nitrate, s.PH, s.Operator); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `UPDATE tanks SET dosed_ml_week = dosed_ml_week + $2 WHERE id = $1`, s.Tank, s.DosedMl); err != nil {
		return err
	}
	if s.PH < 7.8 {
		h.log.Warn("low pH", "tank", s.Tank, "ph", s.PH)
	}
	return tx.Commit(ctx)
}
