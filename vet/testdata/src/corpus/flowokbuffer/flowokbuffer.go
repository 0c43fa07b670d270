// Package flowokbuffer is a correct corpus package: a per-message batch,
// attached to the handler's transaction and flushed before it returns.
package flowokbuffer

import (
	"context"
	"strings"

	"corpus/internal/batcher"
	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type order struct {
	ID    string   `json:"id"`
	Lines []string `json:"lines"`
}

func handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	o := order{ID: m.ID, Lines: strings.Split(m.ID, ",")}
	var b batcher.Batch
	b.Attach(tx)
	for _, sku := range o.Lines {
		b.Queue("INSERT INTO order_lines (order_id, sku) VALUES ($1, $2)", o.ID, sku)
	}
	return b.Flush(ctx)
}

// New builds the handler.
func New() consumer.Handler { return postgres.HandlerFunc(handle) }
