// Package refunds books approved refunds and hands them to the payment
// provider integration.
package refunds

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/store/postgres"

	"heldout/platform/pipeline"
)

// Refunds books refunds.
type Refunds struct {
	sqs      *sqs.Client
	queueURL string
}

type refundApproved struct {
	RefundID    string `json:"refund_id"`
	PaymentID   string `json:"payment_id"`
	AmountCents int64  `json:"amount_cents"`
}

func (r *Refunds) book(ctx context.Context, tx pgx.Tx, ev refundApproved) error {
	if _, err := tx.Exec(ctx,
		`INSERT INTO refunds (id, payment_id, amount_cents, state) VALUES ($1, $2, $3, 'requested')`,
		ev.RefundID, ev.PaymentID, ev.AmountCents); err != nil {
		return fmt.Errorf("refund row: %w", err)
	}
	body, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	msg := string(body)
	_, err = r.sqs.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &r.queueURL, MessageBody: &msg}) // want "SQS send inside the transactional handler"
	return err
}

// Run consumes refunds.approved.
func Run(ctx context.Context, broker adapters.Broker, pool *pgxpool.Pool, client *sqs.Client, queueURL string) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	r := &Refunds{sqs: client, queueURL: queueURL}
	return pipeline.Run(ctx, broker, st, pipeline.Spec{
		Source:  "refunds.approved",
		Name:    "refunds",
		Handler: pipeline.Typed(r.book),
	})
}
