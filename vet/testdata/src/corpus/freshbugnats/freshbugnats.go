// Package freshbugnats is a held-out corpus package (second round): a NATS
// publish inside the claim's transaction.
package freshbugnats

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type relay struct{ js nats.JetStreamContext }

func (r *relay) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	if _, err := tx.Exec(ctx, "INSERT INTO seen (id) VALUES ($1)", m.ID); err != nil {
		return err
	}
	_, err := r.js.Publish("orders.accepted", []byte(m.ID)) // want `outside the database`
	return err
}

func New(nc *nats.Conn) (consumer.Handler, error) {
	js, err := nc.JetStream()
	if err != nil {
		return nil, err
	}
	return postgres.HandlerFunc((&relay{js: js}).handle), nil
}
