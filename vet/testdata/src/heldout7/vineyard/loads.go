package vineyard

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
)

type load struct {
	Ticket  string  `json:"ticket"`
	Block   string  `json:"block"`
	Variety string  `json:"variety"`
	Kilos   float64 `json:"kilos"`
	Brix    float64 `json:"brix"`
}

func (p *PressHouse) receiveLoad(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var l load
	if err := json.Unmarshal(msg.Body, &l); err != nil {
		return consumer.Permanent(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO loads (ticket, block, variety, kilos, brix) VALUES ($1, $2, $3, $4, $5)`,
		l.Ticket, l.Block, l.Variety, l.Kilos, l.Brix); err != nil {
		return fmt.Errorf("load %s: %w", l.Ticket, err)
	}
	if _, err := tx.Exec(ctx, `UPDATE blocks SET harvested_kg = harvested_kg + $2 WHERE id = $1`, l.Block, l.Kilos); err != nil {
		return err
	}
	if l.Brix > p.maxBrix {
		return p.flagLoad(ctx, l)
	}
	return nil
}

// flagLoad records an over-ripe load for the winemaker to look at.
func (p *PressHouse) flagLoad(ctx context.Context, l load) error {
	p.log.Warn("load over max brix", "ticket", l.Ticket, "brix", l.Brix)
	return pgx.BeginFunc(ctx, p.pool, func(ftx pgx.Tx) error { // want "pool"
		if _, err := ftx.Exec(ctx, `INSERT INTO winemaker_flags (ticket, reason) VALUES ($1, $2)`,
			l.Ticket, fmt.Sprintf("brix %.1f over %.1f", l.Brix, p.maxBrix)); err != nil {
			return err
		}
		_, err := ftx.Exec(ctx, `UPDATE blocks SET flagged_loads = flagged_loads + 1 WHERE id = $1`, l.Block)
		return err
	})
}
