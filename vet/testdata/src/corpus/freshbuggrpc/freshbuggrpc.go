// Package freshbuggrpc is a held-out corpus package (second round): a
// generated gRPC client called inside the claim's transaction.
package freshbuggrpc

import (
	"context"
	"errors"

	"corpus/internal/billingpb"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

type charger struct{ billing billingpb.BillingClient }

func (c *charger) Handle(ctx context.Context, m *consumer.Message) error {
	tx, ok := postgres.Tx(ctx)
	if !ok {
		return errors.New("no claim transaction")
	}
	reply, err := c.billing.Charge(ctx, &billingpb.ChargeRequest{Account: m.ID, Cents: 500}) // want `outside the database`
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, "INSERT INTO charges (order_id, charge_id) VALUES ($1, $2)", m.ID, reply.ID)
	return err
}

func Wire(src consumer.Source, st *postgres.Store, b billingpb.BillingClient) (*consumer.Consumer, error) {
	return consumer.New(src, &charger{billing: b}, consumer.Config{Name: "charges"}, middleware.Logging(), middleware.Idempotency(st))
}
