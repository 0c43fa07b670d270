// Package gapoksteps is a correct corpus handler package (see
// vet/corpus_test.go): the same pipeline of steps, the audit row written
// through the claim's transaction; the carrier check reads through the
// pool.
package gapoksteps

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type shipment struct {
	ID      string `json:"id"`
	Carrier string `json:"carrier"`
}

type step func(ctx context.Context, tx pgx.Tx, s *shipment) error

type importer struct {
	pool  *pgxpool.Pool
	steps []step
}

// New returns the shipment importer, a handler behind the Postgres claim.
func New(pool *pgxpool.Pool) consumer.Handler {
	im := &importer{pool: pool}
	im.steps = []step{im.checkCarrier, im.upsert, im.audit}
	return postgres.HandlerFunc(im.handle)
}

func (im *importer) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	var s shipment
	if err := json.Unmarshal(m.Body, &s); err != nil {
		return consumer.Permanent(err)
	}
	for _, run := range im.steps {
		if err := run(ctx, tx, &s); err != nil {
			return err
		}
	}
	return nil
}

func (im *importer) checkCarrier(ctx context.Context, _ pgx.Tx, s *shipment) error {
	var ok bool
	return im.pool.QueryRow(ctx, "SELECT active FROM carriers WHERE code = $1", s.Carrier).Scan(&ok)
}

func (im *importer) upsert(ctx context.Context, tx pgx.Tx, s *shipment) error {
	_, err := tx.Exec(ctx, "INSERT INTO shipments (id, carrier) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING", s.ID, s.Carrier)
	return err
}

func (im *importer) audit(ctx context.Context, tx pgx.Tx, s *shipment) error {
	_, err := tx.Exec(ctx, "INSERT INTO shipment_audit (id) VALUES ($1)", s.ID)
	return err
}
