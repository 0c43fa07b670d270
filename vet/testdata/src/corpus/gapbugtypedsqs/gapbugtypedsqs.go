// Package gapbugtypedsqs is a corpus handler package with a bug (see
// vet/corpus_test.go): an SQS send in a method given to a platform
// package's generic wrapper, which runs it in the claim's transaction.
package gapbugtypedsqs

import (
	"context"

	"corpus/internal/pipeline"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
)

type refund struct{ ID string }

type refunds struct {
	sqs   *sqs.Client
	queue string
}

func (r *refunds) book(ctx context.Context, tx pgx.Tx, ev refund) error {
	if _, err := tx.Exec(ctx, "INSERT INTO refunds (id) VALUES ($1)", ev.ID); err != nil {
		return err
	}
	_, err := r.sqs.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &r.queue, MessageBody: &ev.ID}) // want `the SQS SendMessage is an effect outside the database`
	return err
}

// New builds the handler.
func New(client *sqs.Client, queue string) consumer.Handler {
	return pipeline.Typed((&refunds{sqs: client, queue: queue}).book)
}
