// Package gapokshaped is a correct corpus handler package (see
// vet/corpus_test.go): its handlers have the shape postgres.HandlerFunc
// takes and are exported for the service's main package to wire; they
// write only through the transaction they are given and read through the
// pool, and the pool's writes are in a function of another shape that
// runs outside any handler.
package gapokshaped

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
)

// Shipments handles shipment events; main wires its methods.
type Shipments struct{ Pool *pgxpool.Pool }

// Shipped records a shipment, if its carrier is known.
func (s *Shipments) Shipped(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	var known bool
	if err := s.Pool.QueryRow(ctx, `SELECT true FROM carriers WHERE id = $1`, string(m.Body)).Scan(&known); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `UPDATE shipments SET state = 'shipped' WHERE id = $1`, m.Key)
	return err
}

// Prune deletes delivered shipments older than a month; main runs it on a
// timer, outside any handler.
func (s *Shipments) Prune(ctx context.Context) error {
	_, err := s.Pool.Exec(ctx, `DELETE FROM shipments WHERE state = 'delivered' AND at < now() - interval '1 month'`)
	return err
}
