package usagemeter

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

// route handles one event type in the claim's transaction.
type route func(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error

// routes maps the "type" header to its handler.
func (m *meter) routes() map[string]route {
	return map[string]route{
		"usage.recorded": m.recordUsage,
		"usage.reset":    m.resetUsage,
		"plan.changed":   m.changePlan,
	}
}

// handler dispatches on the message's type header.
func (m *meter) handler() consumer.Handler {
	table := m.routes()
	return postgres.HandlerFunc(func(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
		r, ok := table[msg.Headers["type"]]
		if !ok {
			return consumer.Permanent(fmt.Errorf("usagemeter: no route for type %q", msg.Headers["type"]))
		}
		return r(ctx, tx, msg)
	})
}
