// Package pharmacy records prescriptions dispensed at the counter.
package pharmacy

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type dispensed struct {
	RxID     string `json:"rx_id"`
	NDC      string `json:"ndc"`
	Quantity int    `json:"quantity"`
}

// Dispenser books dispensing events.
type Dispenser struct {
	DB *sql.DB // legacy inventory schema, still on database/sql
}

// Handle books the dispense in the claim's transaction and decrements stock.
func (d *Dispenser) Handle(ctx context.Context, msg *consumer.Message) error {
	tx, ok := postgres.Tx(ctx)
	if !ok {
		return errors.New("pharmacy: no transaction in context")
	}
	var ev dispensed
	if err := json.Unmarshal(msg.Body, &ev); err != nil {
		return consumer.Permanent(err)
	}
	if _, err := tx.Exec(ctx, `UPDATE prescriptions SET status = 'dispensed' WHERE id = $1`, ev.RxID); err != nil {
		return err
	}
	_, err := d.DB.ExecContext(ctx, `UPDATE stock SET on_hand = on_hand - $1 WHERE ndc = $2`, ev.Quantity, ev.NDC) // want "pool write inside transactional handler"
	return err
}
