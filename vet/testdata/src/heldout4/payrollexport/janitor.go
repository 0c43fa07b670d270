package payrollexport

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// expireReservations releases time sheets reserved by an export that never
// produced its file, every interval until ctx ends.
func expireReservations(ctx context.Context, log *slog.Logger, pool *pgxpool.Pool, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if _, err := pool.Exec(ctx,
			`UPDATE time_sheets SET reserved_until = NULL WHERE exported_in IS NULL AND reserved_until < now()`); err != nil {
			log.Warn("expire reservations", "err", err)
		}
	}
}
