package pottery

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/outbox"
)

type booking struct {
	Class   string `json:"class"`
	Student string `json:"student"`
	Wheel   bool   `json:"wheel"`
}

type confirmation struct {
	Class   string `json:"class"`
	Student string `json:"student"`
	Place   int    `json:"place"`
}

// Studio books places in classes.
type Studio struct {
	confirmations string
}

func (s *Studio) bookBatch(ctx context.Context, tx pgx.Tx, msgs []*consumer.Message) error {
	sends := make([]outbox.Outgoing, 0, len(msgs))
	for _, m := range msgs {
		var b booking
		if err := json.Unmarshal(m.Body, &b); err != nil {
			return consumer.Permanent(fmt.Errorf("booking %s: %w", m.ID, err))
		}
		var place int
		if err := tx.QueryRow(ctx, `UPDATE classes SET booked = booked + 1 WHERE id = $1 AND booked < capacity RETURNING booked`,
			b.Class).Scan(&place); err != nil {
			return fmt.Errorf("class %s full or unknown: %w", b.Class, err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO places (class, student, wheel) VALUES ($1, $2, $3)`, b.Class, b.Student, b.Wheel); err != nil {
			return err
		}
		body, _ := json.Marshal(confirmation{Class: b.Class, Student: b.Student, Place: place})
		sends = append(sends, outbox.Outgoing{Destination: s.confirmations, Message: &consumer.Message{Key: b.Student, Body: body}})
	}
	return outbox.SendBatch(ctx, tx, sends)
}
