// Package beacon records status reports of the coast's navigation beacons.
package beacon

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"golang.org/x/sync/errgroup"
)

type statusReport struct {
	BeaconID  string          `json:"beacon_id"`
	LampOK    bool            `json:"lamp_ok"`
	BatteryV  float64         `json:"battery_v"`
	Telemetry json.RawMessage `json:"telemetry"`
	Signature string          `json:"signature"`
}

// Monitor is the status handler; it also serves the last report it
// applied to the health page.
type Monitor struct {
	log       *slog.Logger
	lastID    atomic.Value // string: the last message ID applied
	lastAt    atomic.Int64 // unix nanos of the last report
	slowAfter time.Duration
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// verify checks the signature and summarises the telemetry, side by side:
// both are CPU work on the report's bytes.
func (m *Monitor) verify(ctx context.Context, r statusReport) (string, error) {
	var sig, summary string
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		if err := gctx.Err(); err != nil {
			return err
		}
		sig = digest([]byte(r.BeaconID + string(r.Telemetry)))[:16]
		return nil
	})
	g.Go(func() error {
		var fields map[string]any
		if err := json.Unmarshal(r.Telemetry, &fields); err != nil {
			return consumer.Permanent(err)
		}
		summary = fmt.Sprintf("%d fields", len(fields))
		return nil
	})
	if err := g.Wait(); err != nil {
		return "", err
	}
	if sig != r.Signature {
		return "", consumer.Permanent(fmt.Errorf("beacon %s: bad signature", r.BeaconID))
	}
	return summary, nil
}

// Apply is the handler.
func (m *Monitor) Apply(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	watchdog := time.AfterFunc(m.slowAfter, func() {
		m.log.Warn("slow beacon report", "message_id", msg.ID)
	})
	defer watchdog.Stop()

	var r statusReport
	if err := json.Unmarshal(msg.Body, &r); err != nil {
		return consumer.Permanent(err)
	}
	summary, err := m.verify(ctx, r)
	if err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO beacon_status (beacon_id, lamp_ok, battery_v, summary) VALUES ($1, $2, $3, $4)
		ON CONFLICT (beacon_id) DO UPDATE SET lamp_ok = EXCLUDED.lamp_ok, battery_v = EXCLUDED.battery_v, summary = EXCLUDED.summary`,
		r.BeaconID, r.LampOK, r.BatteryV, summary); err != nil {
		return err
	}
	if !r.LampOK {
		if _, err := tx.Exec(ctx, `INSERT INTO maintenance_tasks (beacon_id, reason) VALUES ($1, 'lamp failure') ON CONFLICT DO NOTHING`, r.BeaconID); err != nil {
			return err
		}
	}
	m.lastID.Store(msg.ID)
	m.lastAt.Store(time.Now().UnixNano())
	return nil
}

// Last returns the last message ID applied and when.
func (m *Monitor) Last() (string, time.Time) {
	id, _ := m.lastID.Load().(string)
	return id, time.Unix(0, m.lastAt.Load())
}
