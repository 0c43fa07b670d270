// Package dispatchroutes keeps the courier dispatch board in step with the
// pickup lifecycle.
package dispatchroutes

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
)

type txRoute func(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error

// Board applies pickup events to the dispatch board.
type Board struct {
	routes map[string]txRoute
}

// NewBoard registers the board's routes.
func NewBoard() *Board {
	b := &Board{}
	b.routes = map[string]txRoute{
		"pickup.created":   b.onCreated,
		"pickup.assigned":  b.onAssigned,
		"pickup.completed": b.onCompleted,
	}
	return b
}

func (b *Board) dispatch(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	r, ok := b.routes[msg.Headers["type"]]
	if !ok {
		return consumer.Permanent(fmt.Errorf("dispatch: unknown event type %q", msg.Headers["type"]))
	}
	return r(ctx, tx, msg)
}
