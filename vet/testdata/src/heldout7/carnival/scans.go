package carnival

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
)

type rideScan struct {
	Wristband string    `json:"wristband"`
	Ride      string    `json:"ride"`
	At        time.Time `json:"at"`
}

func (p *Park) scan(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var s rideScan
	if err := json.Unmarshal(msg.Body, &s); err != nil {
		return consumer.Permanent(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO ride_scans (wristband, ride, scanned_at) VALUES ($1, $2, $3)`, s.Wristband, s.Ride, s.At); err != nil {
		return err
	}
	v := p.sessions.get(s.Wristband)
	p.sessions.mu.Lock()
	v.rides++
	v.lastScan = s.At
	v.tx = tx // want "outlives"
	p.sessions.mu.Unlock()
	return nil
}

// closeIdle writes the ride count of every visit idle for longer than p.idle.
func (p *Park) closeIdle(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			p.sessions.mu.Lock()
			for id, v := range p.sessions.visits {
				if now.Sub(v.lastScan) < p.idle {
					continue
				}
				if _, err := v.tx.Exec(ctx, `UPDATE visits SET rides = $2, left_at = $3 WHERE wristband = $1`, id, v.rides, v.lastScan); err != nil {
					p.log.Error("close visit", "wristband", id, "err", err)
				}
				delete(p.sessions.visits, id)
			}
			p.sessions.mu.Unlock()
		}
	}
}
