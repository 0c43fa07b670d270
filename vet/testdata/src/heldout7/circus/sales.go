package circus

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
)

type sale struct {
	Show  string `json:"show"`
	Seat  string `json:"seat"`
	Gate  int    `json:"gate"`
	Cents int64  `json:"cents"`
}

func (g *Gates) sell(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	g.inFlight.Add(1)
	defer g.inFlight.Add(-1)
	id, started := msg.ID, time.Now()
	slow := time.AfterFunc(g.cfg.SlowAfter, func() {
		g.log.Warn("slow gate sale", "message", id, "after", time.Since(started))
	})
	defer slow.Stop()

	var s sale
	if err := json.Unmarshal(msg.Body, &s); err != nil {
		return consumer.Permanent(err)
	}
	if _, err := tx.Exec(ctx, `UPDATE seats SET sold = true, held_by = NULL WHERE show = $1 AND id = $2`, s.Show, s.Seat); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO gate_takings (show, gate, cents) VALUES ($1, $2, $3)`, s.Show, s.Gate, s.Cents); err != nil {
		return err
	}
	g.lastID.Store(msg.ID)
	g.lastAt.Store(time.Now().UnixNano())
	g.handled.Add(1)
	return nil
}
