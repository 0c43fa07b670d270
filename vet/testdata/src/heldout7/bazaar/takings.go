package bazaar

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
)

type taking struct {
	Stall       string    `json:"stall"`
	AmountCents int64     `json:"amount_cents"`
	FeeCents    int64     `json:"fee_cents"`
	At          time.Time `json:"at"`
}

type takings struct {
	pool *pgxpool.Pool
}

// record adds a card taking, less the card fee, to the stall's statement.
func (t *takings) record(ctx context.Context, msg *consumer.Message) error {
	var tk taking
	if err := json.Unmarshal(msg.Body, &tk); err != nil {
		return consumer.Permanent(err)
	}
	year, week := tk.At.ISOWeek()
	return pgx.BeginFunc(ctx, t.pool, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO statements (stall, year, week, net_cents) VALUES ($1, $2, $3, $4)
			ON CONFLICT (stall, year, week) DO UPDATE SET net_cents = statements.net_cents + EXCLUDED.net_cents`,
			tk.Stall, year, week, tk.AmountCents-tk.FeeCents)
		return err
	})
}
