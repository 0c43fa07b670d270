// Package customs clears import declarations.
package customs

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type declaration struct {
	Ref     string `json:"ref"`
	HSCode  string `json:"hs_code"`
	DutyCts int64  `json:"duty_cents"`
}

// Clearance clears declarations and keeps a broker audit trail.
type Clearance struct {
	pool *pgxpool.Pool
}

// Handle runs inside the claim transaction.
func (c *Clearance) Handle(ctx context.Context, msg *consumer.Message) error {
	tx, ok := postgres.Tx(ctx)
	if !ok {
		return fmt.Errorf("customs: handler %s needs the postgres claim", msg.Source)
	}
	var d declaration
	if err := json.Unmarshal(msg.Body, &d); err != nil {
		return consumer.Permanent(err)
	}
	if _, err := tx.Exec(ctx, `UPDATE declarations SET status = 'cleared', duty_cents = $2 WHERE ref = $1`, d.Ref, d.DutyCts); err != nil {
		return err
	}
	conn, err := c.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	_, err = conn.Exec(ctx, `INSERT INTO broker_audit (ref, hs_code, event) VALUES ($1, $2, 'cleared')`, d.Ref, d.HSCode) // want "pool write inside transactional handler"
	return err
}

// Run starts the clearance consumer.
func Run(ctx context.Context, src consumer.Source, pool *pgxpool.Pool) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	h := consumer.Chain(&Clearance{pool: pool}, middleware(st)...)
	c, err := consumer.New(src, h, consumer.Config{Name: "customs-clearance"})
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
