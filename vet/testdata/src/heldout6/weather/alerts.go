// Package weather stores severe-weather alerts for the warning map.
package weather

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
)

type alert struct {
	ID       string `json:"id"`
	Zone     string `json:"zone"`
	Severity string `json:"severity"`
}

type alertStore struct {
	pool *pgxpool.Pool
}

func (s alertStore) Handle(ctx context.Context, msg *consumer.Message) error {
	var a alert
	if err := json.Unmarshal(msg.Body, &a); err != nil {
		return consumer.Permanent(err)
	}
	_, err := s.pool.Exec(ctx, `UPDATE zones SET active_alerts = active_alerts + 1, severity = $2 WHERE zone = $1`, a.Zone, a.Severity)
	return err
}

// Run starts the alert consumer.
func Run(ctx context.Context, src consumer.Source, pool *pgxpool.Pool) error {
	c, err := consumer.New(src, alertStore{pool: pool}, consumer.Config{Name: "weather-alerts", Concurrency: 8}, middleware.Logging()) // want "consumer without idempotency or AllowDuplicates"
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
