package tollroad

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
)

type passage struct {
	Plate    string    `json:"plate"`
	Gantry   string    `json:"gantry"`
	At       time.Time `json:"at"`
	FeeCents int64     `json:"fee_cents"`
}

// passageRows feeds CopyFrom from decoded passages.
type passageRows struct {
	rows []passage
	i    int
}

func (p *passageRows) Next() bool {
	p.i++
	return p.i <= len(p.rows)
}

func (b *Booker) bookBatch(ctx context.Context, tx pgx.Tx, msgs []*consumer.Message) error {
	passages := make([]passage, 0, len(msgs))
	for _, m := range msgs {
		var p passage
		if err := json.Unmarshal(m.Body, &p); err != nil {
			return consumer.Permanent(fmt.Errorf("passage %s: %w", m.ID, err))
		}
		passages = append(passages, p)
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"toll", "passages"},
		[]string{"plate", "gantry", "passed_at", "fee_cents"}, &passageRows{rows: passages}); err != nil {
		return fmt.Errorf("copy passages: %w", err)
	}

	debits := &pgx.Batch{}
	for _, p := range passages {
		debits.Queue(`UPDATE toll.accounts SET balance_cents = balance_cents - $2, last_passage = $3 WHERE plate = $1`,
			p.Plate, p.FeeCents, p.At)
	}
	br := b.db.SendBatch(ctx, debits) // want "pool"
	if err := br.Close(); err != nil {
		return fmt.Errorf("debit accounts: %w", err)
	}
	b.log.Debug("booked passages", "count", len(passages))
	return nil
}
