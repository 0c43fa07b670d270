package alerts

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
)

type thresholdCrossed struct {
	AlertID   string  `json:"alert_id"`
	Recipient string  `json:"recipient"`
	Metric    string  `json:"metric"`
	Value     float64 `json:"value"`
	Threshold float64 `json:"threshold"`
}

// queueAlert records the alert to send; the sender loop delivers it.
func queueAlert(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var t thresholdCrossed
	if err := json.Unmarshal(msg.Body, &t); err != nil {
		return consumer.Permanent(err)
	}
	subject := fmt.Sprintf("%s is %.2f (threshold %.2f)", t.Metric, t.Value, t.Threshold)
	_, err := tx.Exec(ctx,
		`INSERT INTO pending_alerts (id, recipient, subject) VALUES ($1, $2, $3) ON CONFLICT (id) DO NOTHING`,
		t.AlertID, t.Recipient, subject)
	return err
}
