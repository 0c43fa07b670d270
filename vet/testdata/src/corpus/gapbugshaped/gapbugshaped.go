// Package gapbugshaped is a corpus handler package with a bug (see
// vet/corpus_test.go): its handlers have the shape postgres.HandlerFunc
// takes and are exported for the service's main package to wire; the
// package itself never calls postgres.HandlerFunc. The shipment handler
// writes its audit row through the pool: it commits on its own and repeats
// on every redelivery.
package gapbugshaped

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
)

// Shipments handles shipment events; main wires its methods.
type Shipments struct{ Pool *pgxpool.Pool }

// Shipped records a shipment.
func (s *Shipments) Shipped(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	if _, err := tx.Exec(ctx, `UPDATE shipments SET state = 'shipped' WHERE id = $1`, m.Key); err != nil {
		return err
	}
	_, err := s.Pool.Exec(ctx, `INSERT INTO shipment_audit (id) VALUES ($1)`, m.ID) // want `\*pgxpool.Pool.Exec runs outside the claim's transaction`
	return err
}

// Delivered records a delivery.
func (s *Shipments) Delivered(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	_, err := tx.Exec(ctx, `UPDATE shipments SET state = 'delivered' WHERE id = $1`, m.Key)
	return err
}
