// Package freshbugsqs is a held-out corpus package (second round): an SQS
// message sent from a Process callback.
package freshbugsqs

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type Notifier struct {
	st       *postgres.Store
	sqs      *sqs.Client
	queueURL string
}

func (n *Notifier) Notify(ctx context.Context, m *consumer.Message) error {
	_, err := n.st.Process(ctx, "notify", m.ID, func(ctx context.Context) error {
		tx, _ := postgres.Tx(ctx)
		if _, err := tx.Exec(ctx, "INSERT INTO notified (id) VALUES ($1)", m.ID); err != nil {
			return err
		}
		body := "order " + m.ID
		_, err := n.sqs.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &n.queueURL, MessageBody: &body}) // want `outside the database`
		return err
	})
	return err
}
