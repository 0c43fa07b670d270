package matchmaking

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

type ratingRepo struct{}

func (ratingRepo) pair(ctx context.Context, tx pgx.Tx, a, b string) (float64, float64, error) {
	var ra, rb float64
	if err := tx.QueryRow(ctx, `SELECT rating FROM players WHERE id = $1 FOR UPDATE`, a).Scan(&ra); err != nil {
		return 0, 0, fmt.Errorf("rating of %s: %w", a, err)
	}
	if err := tx.QueryRow(ctx, `SELECT rating FROM players WHERE id = $1 FOR UPDATE`, b).Scan(&rb); err != nil {
		return 0, 0, fmt.Errorf("rating of %s: %w", b, err)
	}
	return ra, rb, nil
}

func (ratingRepo) adjust(ctx context.Context, tx pgx.Tx, player string, delta float64) error {
	if _, err := tx.Exec(ctx, `UPDATE players SET rating = rating + $2, games = games + 1 WHERE id = $1`, player, delta); err != nil {
		return fmt.Errorf("adjust %s: %w", player, err)
	}
	return nil
}
