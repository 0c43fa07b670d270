package harvest

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
)

type lot struct {
	LotID string  `json:"lot_id"`
	Kg    float64 `json:"kg"`
	Grade string  `json:"grade"`
	Truck string  `json:"truck"`
}

// Handlers apply harvest events to lots.
type Handlers struct{}

func decode(msg *consumer.Message) (lot, error) {
	var l lot
	if err := json.Unmarshal(msg.Body, &l); err != nil {
		return l, consumer.Permanent(err)
	}
	return l, nil
}

func (Handlers) onWeighed(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	l, err := decode(msg)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `UPDATE lots SET kg = kg + $2 WHERE id = $1`, l.LotID, l.Kg)
	return err
}

func (Handlers) onDispatched(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	l, err := decode(msg)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `INSERT INTO dispatches (lot_id, truck) VALUES ($1, $2)`, l.LotID, l.Truck)
	return err
}

func (Handlers) onGraded(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	l, err := decode(msg)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `UPDATE lots SET grade = $2, graded_count = graded_count + 1 WHERE id = $1`, l.LotID, l.Grade)
	return err
}
