// Package intake accepts orders from the storefront and reserves fulfilment.
package intake

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
	"google.golang.org/grpc"

	"heldout9/gateway/internal/fulfilmentpb"
)

type ctxKey struct{}

// withSite records the fulfilment site chosen for the message.
func withSite(ctx context.Context, site string) context.Context {
	return context.WithValue(ctx, ctxKey{}, site)
}

func siteFrom(ctx context.Context) string {
	s, _ := ctx.Value(ctxKey{}).(string)
	return s
}

// Intake accepts orders.
type Intake struct {
	fulfil fulfilmentpb.FulfilmentClient
}

func (in *Intake) accept(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var o struct {
		ID       string `json:"id"`
		Postcode string `json:"postcode"`
	}
	if err := json.Unmarshal(msg.Body, &o); err != nil {
		return consumer.Permanent(err)
	}
	ctx = withSite(ctx, siteFor(o.Postcode))
	if _, err := tx.Exec(ctx, `INSERT INTO accepted_orders (id, site) VALUES ($1, $2)`, o.ID, siteFrom(ctx)); err != nil {
		return err
	}
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	reply, err := in.fulfil.Reserve(rctx, &fulfilmentpb.ReserveRequest{OrderId: o.ID, Site: siteFrom(ctx)}) // want "."
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `UPDATE accepted_orders SET slot = $2 WHERE id = $1`, o.ID, reply.Slot)
	return err
}

func (in *Intake) withdraw(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	_, err := tx.Exec(ctx, `DELETE FROM accepted_orders WHERE id = $1`, msg.Key)
	return err
}

func siteFor(postcode string) string {
	if len(postcode) > 0 && postcode[0] < '5' {
		return "north"
	}
	return "south"
}

// Start wires the intake consumers.
func Start(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker, cc *grpc.ClientConn) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	in := &Intake{fulfil: fulfilmentpb.NewFulfilmentClient(cc)}
	acc, err := broker.Source(ctx, "storefront.orders", "gateway-accept")
	if err != nil {
		return err
	}
	wd, err := broker.Source(ctx, "storefront.withdrawn", "gateway-withdraw")
	if err != nil {
		return err
	}
	c1, err := consumer.New(acc, postgres.HandlerFunc(in.accept), consumer.Config{Name: "gateway-accept"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	c2, err := consumer.New(wd, postgres.HandlerFunc(in.withdraw), consumer.Config{Name: "gateway-withdraw"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	go c1.Run(ctx)
	go c2.Run(ctx)
	return nil
}
