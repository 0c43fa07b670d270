package kennel

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type checkin struct {
	DogID  string `json:"dog_id"`
	Owner  string `json:"owner"`
	Kennel int    `json:"kennel"`
	Nights int    `json:"nights"`
}

var errNoTx = errors.New("kennel: no transaction in context")

// CheckinHandler books a stay for each check-in, in the claim's
// transaction, and mirrors it to the front desk.
type CheckinHandler struct {
	legacy *sql.DB
}

// Handle books one check-in.
func (h *CheckinHandler) Handle(ctx context.Context, msg *consumer.Message) error {
	var in checkin
	if err := json.Unmarshal(msg.Body, &in); err != nil {
		return consumer.Permanent(err)
	}
	tx, ok := postgres.Tx(ctx)
	if !ok {
		return errNoTx
	}
	if _, err := tx.Exec(ctx, `INSERT INTO stays (dog_id, owner, kennel, nights) VALUES ($1, $2, $3, $4)`,
		in.DogID, in.Owner, in.Kennel, in.Nights); err != nil {
		return fmt.Errorf("stay: %w", err)
	}
	if _, err := tx.Exec(ctx, `UPDATE kennels SET occupied = true WHERE number = $1`, in.Kennel); err != nil {
		return err
	}
	return h.mirror(ctx, in)
}

func (h *CheckinHandler) mirror(ctx context.Context, in checkin) error {
	_, err := h.legacy.ExecContext(ctx, `INSERT INTO frontdesk_checkins (dog, kennel_no) VALUES (?, ?)`, in.DogID, in.Kennel) // want "sql.DB"
	if err != nil {
		return fmt.Errorf("front desk: %w", err)
	}
	return nil
}
