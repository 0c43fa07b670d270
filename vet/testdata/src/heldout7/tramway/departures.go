package tramway

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/outbox"
)

type departure struct {
	Run  string    `json:"run"`
	Line string    `json:"line"`
	Stop string    `json:"stop"`
	At   time.Time `json:"at"`
}

type delayNotice struct {
	Line    string `json:"line"`
	Stop    string `json:"stop"`
	Minutes int    `json:"minutes"`
}

func (d *Dispatcher) departed(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var dep departure
	if err := json.Unmarshal(msg.Body, &dep); err != nil {
		return consumer.Permanent(err)
	}
	due, err := d.scheduledDeparture(ctx, dep.Run, dep.Stop)
	if err != nil {
		return err
	}
	delay := dep.At.Sub(due)
	if _, err := tx.Exec(ctx, `INSERT INTO departures (run, line, stop, departed_at, delay_s) VALUES ($1, $2, $3, $4, $5)`,
		dep.Run, dep.Line, dep.Stop, dep.At, int(delay.Seconds())); err != nil {
		return fmt.Errorf("departure %s: %w", dep.Run, err)
	}
	if delay < d.cfg.DelayThreshold {
		return nil
	}
	body, err := json.Marshal(delayNotice{Line: dep.Line, Stop: dep.Stop, Minutes: int(delay.Minutes())})
	if err != nil {
		return err
	}
	return outbox.Send(ctx, tx, d.cfg.Announcements, &consumer.Message{Key: dep.Line, Body: body})
}
