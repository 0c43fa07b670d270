// Package warehousepick turns order events into pick tasks for the floor.
package warehousepick

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
)

type route func(ctx context.Context, msg *consumer.Message) error

// router dispatches on the event type header.
type router struct {
	routes map[string]route
}

func newRouter(t *tasks) *router {
	return &router{routes: map[string]route{
		"order.released":  t.createPicks,
		"order.cancelled": t.cancelPicks,
		"order.rushed":    t.rush,
	}}
}

func (r *router) Handle(ctx context.Context, msg *consumer.Message) error {
	rt, ok := r.routes[msg.Headers["event-type"]]
	if !ok {
		return consumer.Permanent(fmt.Errorf("no route for %q", msg.Headers["event-type"]))
	}
	return rt(ctx, msg)
}

// tasks writes the pick task table.
type tasks struct {
	pool *pgxpool.Pool
}
