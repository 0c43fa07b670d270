// Package routing dispatches order events to per-type handlers.
package routing

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
)

type route func(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error

type router struct {
	routes map[string]route
}

func (r *router) dispatch(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	fn, ok := r.routes[msg.Headers["type"]]
	if !ok {
		return consumer.Permanent(fmt.Errorf("no route for %q", msg.Headers["type"]))
	}
	return fn(ctx, tx, msg)
}
