// Package kennel runs the boarding kennel's consumers: check-ins, feeding
// rounds and vet visits, one consumer each.
package kennel

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
)

type dogEvent struct {
	DogID  string `json:"dog_id"`
	Kennel string `json:"kennel"`
	Note   string `json:"note"`
}

func decodeDog(msg *consumer.Message) (dogEvent, error) {
	var e dogEvent
	if err := json.Unmarshal(msg.Body, &e); err != nil {
		return e, consumer.Permanent(err)
	}
	return e, nil
}

func checkIn(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	e, err := decodeDog(msg)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `INSERT INTO stays (dog_id, kennel, checked_in_at) VALUES ($1, $2, now())`, e.DogID, e.Kennel)
	return err
}

func fed(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	e, err := decodeDog(msg)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `INSERT INTO feedings (dog_id, note, at) VALUES ($1, $2, now())`, e.DogID, e.Note)
	return err
}

func vetVisit(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	e, err := decodeDog(msg)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `INSERT INTO vet_visits (dog_id, note, at) VALUES ($1, $2, now())`, e.DogID, e.Note)
	return err
}
