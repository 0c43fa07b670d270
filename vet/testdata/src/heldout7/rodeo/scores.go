package rodeo

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
)

type judgeScore struct {
	Event     string  `json:"event"`
	Rider     string  `json:"rider"`
	Judge     int     `json:"judge"`
	RiderPts  float64 `json:"rider_points"`
	AnimalPts float64 `json:"animal_points"`
}

// score books one judge's score; the ride's total is the sum of its judges'.
func score(ctx context.Context, tx pgx.Tx, s judgeScore) error {
	if s.RiderPts > 50 || s.AnimalPts > 50 {
		return consumer.Permanent(fmt.Errorf("judge %d: points over 50", s.Judge))
	}
	if _, err := tx.Exec(ctx, `INSERT INTO judge_scores (event, rider, judge, rider_pts, animal_pts) VALUES ($1, $2, $3, $4, $5)`,
		s.Event, s.Rider, s.Judge, s.RiderPts, s.AnimalPts); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `UPDATE standings SET total = total + $3 WHERE event = $1 AND rider = $2`,
		s.Event, s.Rider, s.RiderPts+s.AnimalPts)
	return err
}
