package cinema

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"

	"heldout7/platform/pgutil"
)

type admission struct {
	Screening string `json:"screening"`
	Ticket    string `json:"ticket"`
	Seat      string `json:"seat"`
}

type admissionHandler struct{}

// Handle admits one ticket in the claim's transaction.
func (admissionHandler) Handle(ctx context.Context, msg *consumer.Message) error {
	var a admission
	if err := json.Unmarshal(msg.Body, &a); err != nil {
		return consumer.Permanent(err)
	}
	tx, ok := postgres.Tx(ctx)
	if !ok {
		return errors.New("cinema: handler without a claim")
	}
	return admit(ctx, tx, a)
}

func admit(ctx context.Context, db pgutil.DBTX, a admission) error {
	if _, err := db.Exec(ctx, `INSERT INTO admissions (screening, ticket, seat, screened_on)
		SELECT $1, $2, $3, starts_at::date FROM screenings WHERE id = $1`, a.Screening, a.Ticket, a.Seat); err != nil {
		return err
	}
	_, err := db.Exec(ctx, `UPDATE screenings SET admitted = admitted + 1 WHERE id = $1`, a.Screening)
	return err
}
