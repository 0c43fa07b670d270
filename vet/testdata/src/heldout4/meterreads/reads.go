// Package meterreads bills interval reads from smart electricity meters.
package meterreads

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type intervalRead struct {
	MeterID string    `json:"meter_id"`
	Start   time.Time `json:"start"`
	Wh      int64     `json:"wh"`
}

// Biller prices reads.
type Biller struct {
	tariffs *tariffs
}

// Handle prices one interval and adds it to the open bill.
func (b *Biller) Handle(ctx context.Context, msg *consumer.Message) error {
	var r intervalRead
	if err := json.Unmarshal(msg.Body, &r); err != nil {
		return consumer.Permanent(fmt.Errorf("decode read: %w", err))
	}
	tx, ok := postgres.Tx(ctx)
	if !ok {
		return fmt.Errorf("meterreads: no claim transaction")
	}
	var plan, account string
	if err := tx.QueryRow(ctx, `SELECT plan, account_id FROM meters WHERE id = $1`, r.MeterID).Scan(&plan, &account); err != nil {
		return fmt.Errorf("meter %s: %w", r.MeterID, err)
	}
	price, err := b.tariffs.priceAt(ctx, plan, r.Start)
	if err != nil {
		return err
	}
	if _, err := tx.Exec(ctx,
		`INSERT INTO interval_charges (meter_id, start, wh, micros) VALUES ($1, $2, $3, $4)`,
		r.MeterID, r.Start, r.Wh, r.Wh*price); err != nil {
		return fmt.Errorf("charge interval: %w", err)
	}
	_, err = tx.Exec(ctx, `UPDATE open_bills SET micros = micros + $2, wh = wh + $3 WHERE account_id = $1`, account, r.Wh*price, r.Wh)
	return err
}
