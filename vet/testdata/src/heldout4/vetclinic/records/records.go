// Package records writes patient (animal) records on the claim's
// transaction, which it takes from the context.
package records

import (
	"context"
	"errors"
	"fmt"

	"github.com/oncely/oncely/store/postgres"
)

// ErrNoTx means the caller is not inside a claimed handler.
var ErrNoTx = errors.New("records: no claim transaction in context")

// AddVaccination records a vaccination and schedules its booster.
func AddVaccination(ctx context.Context, petID, vaccine, batch string, boosterWeeks int) error {
	tx, ok := postgres.Tx(ctx)
	if !ok {
		return ErrNoTx
	}
	if _, err := tx.Exec(ctx,
		`INSERT INTO vaccinations (pet_id, vaccine, batch_no, given_on) VALUES ($1, $2, $3, current_date)`,
		petID, vaccine, batch); err != nil {
		return fmt.Errorf("vaccination: %w", err)
	}
	if boosterWeeks == 0 {
		return nil
	}
	_, err := tx.Exec(ctx,
		`INSERT INTO recalls (pet_id, reason, due_on) VALUES ($1, $2, current_date + $3 * 7)`,
		petID, "booster "+vaccine, boosterWeeks)
	return err
}
