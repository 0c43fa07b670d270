// Package gapoktypedsqs is a correct corpus handler package (see
// vet/corpus_test.go): the method given to the platform wrapper writes the
// refund request to the outbox in the claim's transaction.
package gapoktypedsqs

import (
	"context"

	"corpus/internal/pipeline"
	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/outbox"
)

type refund struct{ ID string }

type refunds struct{ queue string }

func (r *refunds) book(ctx context.Context, tx pgx.Tx, ev refund) error {
	if _, err := tx.Exec(ctx, "INSERT INTO refunds (id) VALUES ($1)", ev.ID); err != nil {
		return err
	}
	return outbox.Send(ctx, tx, r.queue, &consumer.Message{ID: ev.ID})
}

// New builds the handler.
func New(queue string) consumer.Handler {
	return pipeline.Typed((&refunds{queue: queue}).book)
}
