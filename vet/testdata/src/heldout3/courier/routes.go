package courier

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

// step handles one job event with the claim's transaction.
type step func(ctx context.Context, tx pgx.Tx, job jobEvent) error

type jobEvent struct {
	JobID     string `json:"job_id"`
	Type      string `json:"type"`
	Pickup    string `json:"pickup"`
	Dropoff   string `json:"dropoff"`
	CourierID string `json:"courier_id"`
}

var steps map[string]step

func (d *dispatcher) register() {
	steps = map[string]step{
		"job.created":   d.assign,
		"job.picked-up": d.pickedUp,
		"job.delivered": d.delivered,
	}
}

func dispatch(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var j jobEvent
	if err := json.Unmarshal(msg.Body, &j); err != nil {
		return consumer.Permanent(err)
	}
	s, ok := steps[j.Type]
	if !ok {
		return consumer.Permanent(fmt.Errorf("courier: unknown job event %q", j.Type))
	}
	return s(ctx, tx, j)
}

var handler = postgres.HandlerFunc(dispatch)
