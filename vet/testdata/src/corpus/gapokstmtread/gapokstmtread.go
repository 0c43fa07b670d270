// Package gapokstmtread is a correct corpus handler package (see
// vet/corpus_test.go): the handler looks a rate up through a statement
// prepared on the pool at start, a constant SELECT: a read commits and
// repeats nothing; its write goes through the transaction.
package gapokstmtread

import (
	"context"
	"database/sql"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type rates struct{ byCurrency *sql.Stmt }

func openRates(ctx context.Context, db *sql.DB) (*rates, error) {
	stmt, err := db.PrepareContext(ctx, `SELECT rate FROM fx_rates WHERE currency = $1`)
	if err != nil {
		return nil, err
	}
	return &rates{byCurrency: stmt}, nil
}

func (r *rates) rate(ctx context.Context, currency string) (float64, error) {
	var v float64
	err := r.byCurrency.QueryRowContext(ctx, currency).Scan(&v)
	return v, err
}

type handler struct{ rates *rates }

func (h *handler) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	rate, err := h.rates.rate(ctx, string(m.Body))
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, "INSERT INTO conversions (msg, rate) VALUES ($1, $2)", m.ID, rate)
	return err
}

// New builds the handler over db.
func New(ctx context.Context, db *sql.DB) (consumer.Handler, error) {
	r, err := openRates(ctx, db)
	if err != nil {
		return nil, err
	}
	return postgres.HandlerFunc((&handler{rates: r}).handle), nil
}
