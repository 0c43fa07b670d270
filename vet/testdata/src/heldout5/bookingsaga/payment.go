package bookingsaga

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/outbox"
	"github.com/oncely/oncely/store/postgres"
)

var errUnclaimed = errors.New("bookingsaga: payment step needs the claim transaction")

type paymentCaptured struct {
	SagaID    string `json:"saga_id"`
	BookingID string `json:"booking_id"`
	Cents     int64  `json:"cents"`
}

type sagaRepo struct{}

func (sagaRepo) advance(ctx context.Context, tx pgx.Tx, sagaID, state string) error {
	_, err := tx.Exec(ctx, `UPDATE sagas SET state = $2, updated_at = now() WHERE id = $1`, sagaID, state)
	return err
}

// PaymentStep moves a saga on once payment is captured.
type PaymentStep struct {
	deps  *Deps
	sagas sagaRepo
}

// Handle advances the saga and asks for ticket issuance through the outbox.
func (p *PaymentStep) Handle(ctx context.Context, msg *consumer.Message) error {
	tx, ok := postgres.Tx(ctx)
	if !ok {
		return errUnclaimed
	}
	var ev paymentCaptured
	if err := json.Unmarshal(msg.Body, &ev); err != nil {
		return consumer.Permanent(err)
	}
	if err := p.sagas.advance(ctx, tx, ev.SagaID, "paid"); err != nil {
		return err
	}
	p.deps.Log.InfoContext(ctx, "saga paid", "saga", ev.SagaID)
	return outbox.Send(ctx, tx, "tickets.issue", &consumer.Message{Key: ev.BookingID, Body: msg.Body})
}
