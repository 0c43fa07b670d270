// Package freshokallowed is a held-out corpus package (second round): a
// gRPC charge made before the claim (by the team's choice, keyed by the
// message ID on the billing side), then the Postgres handler.
package freshokallowed

import (
	"context"

	"corpus/internal/billingpb"
	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type handler struct{ billing billingpb.BillingClient }

func (h *handler) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	//oncely:allow txescape billing deduplicates charges by the message ID (idempotency key)
	reply, err := h.billing.Charge(ctx, &billingpb.ChargeRequest{Account: m.ID, Cents: 100})
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, "INSERT INTO charges (order_id, charge_id) VALUES ($1, $2)", m.ID, reply.ID)
	return err
}

func New(b billingpb.BillingClient) consumer.Handler {
	return postgres.HandlerFunc((&handler{billing: b}).handle)
}
