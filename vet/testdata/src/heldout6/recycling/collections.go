// Package recycling books kerbside collections and bills the council.
package recycling

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/outbox"
	"github.com/oncely/oncely/store/postgres"
)

type binEmptied struct {
	Route   string `json:"route"`
	Address string `json:"address"`
	Stream  string `json:"stream"`
	Kg      int    `json:"kg"`
}

// Service books collections.
type Service struct {
	BillingTopic string
}

func (s *Service) collect(ctx context.Context, tx pgx.Tx, msgs []*consumer.Message) error {
	sends := make([]outbox.Outgoing, 0, len(msgs))
	for _, m := range msgs {
		var b binEmptied
		if err := json.Unmarshal(m.Body, &b); err != nil {
			return consumer.Permanent(err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO collections (msg_id, route, address, stream, kg) VALUES ($1, $2, $3, $4, $5)`,
			m.ID, b.Route, b.Address, b.Stream, b.Kg); err != nil {
			return err
		}
		sends = append(sends, outbox.Outgoing{
			Destination: s.BillingTopic,
			Message:     &consumer.Message{ID: fmt.Sprintf("bill-%s", m.ID), Key: b.Route, Body: m.Body},
		})
	}
	return outbox.SendBatch(ctx, tx, sends)
}

// Run starts the batch consumer.
func Run(ctx context.Context, src consumer.Source, st *postgres.Store) error {
	s := &Service{BillingTopic: "council.billing"}
	handle := s.collect
	c, err := consumer.New(src, postgres.BatchHandlerFunc(handle), consumer.Config{Name: "recycling-collections"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
