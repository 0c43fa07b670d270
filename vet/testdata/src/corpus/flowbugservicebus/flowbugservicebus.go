// Package flowbugservicebus is a corpus package: an invoice event sent to
// Azure Service Bus from inside the claim's transaction.
package flowbugservicebus

import (
	"context"

	"github.com/Azure/azure-sdk-for-go/sdk/messaging/azservicebus"
	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type invoicer struct {
	events *azservicebus.Sender
}

func (i *invoicer) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	if _, err := tx.Exec(ctx, "UPDATE invoices SET issued = true WHERE order_id = $1", m.ID); err != nil {
		return err
	}
	return i.events.SendMessage(ctx, &azservicebus.Message{Body: []byte(m.ID)}, nil) // want `effect outside the database`
}

// New builds the handler.
func New(events *azservicebus.Sender) consumer.Handler {
	return postgres.HandlerFunc((&invoicer{events: events}).handle)
}
