// Package notifications fans events out to users' chosen channels.
package notifications

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/store/postgres"

	"heldout/notifications/prefs"
	"heldout/platform/pipeline"
)

// Main wires the notification service and runs it.
func Main(ctx context.Context, broker adapters.Broker, pool *pgxpool.Pool) error {
	deps := prefs.Deps{
		Channels: func(ctx context.Context, userID string) ([]prefs.Channel, error) {
			rows, err := pool.Query(ctx, `SELECT channel FROM notification_prefs WHERE user_id = $1`, userID)
			if err != nil {
				return nil, err
			}
			defer rows.Close()
			return []prefs.Channel{prefs.Email}, nil
		},
		RecordDelivery: func(ctx context.Context, userID string, ch prefs.Channel, at time.Time) error {
			_, err := pool.Exec(ctx,
				`INSERT INTO notification_deliveries (user_id, channel, queued_at) VALUES ($1, $2, $3)`,
				userID, string(ch), at)
			return err
		},
	}
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	n := &Notifier{deps: deps}
	return pipeline.Run(ctx, broker, st, pipeline.Spec{
		Source:      "user.events",
		Name:        "notifications",
		Concurrency: 4,
		Handler:     pipeline.Typed(n.notify),
	})
}
