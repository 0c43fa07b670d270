// Package geofence raises enter and leave events when trackers cross the
// fences of their fleet.
package geofence

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/outbox"
	"golang.org/x/sync/errgroup"
)

type position struct {
	TrackerID string  `json:"tracker_id"`
	Lat       float64 `json:"lat"`
	Lon       float64 `json:"lon"`
}

// Watcher evaluates positions against the fleet's zones.
type Watcher struct {
	zones func(fleet string) []zone
}

func (w *Watcher) onPosition(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var pos position
	if err := json.Unmarshal(msg.Body, &pos); err != nil {
		return consumer.Permanent(fmt.Errorf("decode position: %w", err))
	}
	var fleet string
	var wasIn []string
	if err := tx.QueryRow(ctx, `SELECT fleet_id, inside_zones FROM trackers WHERE id = $1 FOR UPDATE`, pos.TrackerID).Scan(&fleet, &wasIn); err != nil {
		return fmt.Errorf("tracker %s: %w", pos.TrackerID, err)
	}
	zones := w.zones(fleet)
	in := make([]bool, len(zones))
	g, gctx := errgroup.WithContext(ctx)
	for i, z := range zones {
		g.Go(func() error {
			ok, err := inside(gctx, z, point{pos.Lat, pos.Lon})
			in[i] = ok
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	var now []string
	for i, z := range zones {
		if in[i] {
			now = append(now, z.ID)
		}
	}
	if _, err := tx.Exec(ctx, `UPDATE trackers SET inside_zones = $2 WHERE id = $1`, pos.TrackerID, now); err != nil {
		return fmt.Errorf("store zones: %w", err)
	}
	for _, ev := range crossings(wasIn, now) {
		body, _ := json.Marshal(map[string]string{"tracker_id": pos.TrackerID, "zone_id": ev.zone, "kind": ev.kind})
		if err := outbox.Send(ctx, tx, "fleet.geofence", &consumer.Message{ID: msg.ID + ":" + ev.kind + ":" + ev.zone, Key: pos.TrackerID, Body: body}); err != nil {
			return err
		}
	}
	return nil
}

type crossing struct{ zone, kind string }

func crossings(before, after []string) []crossing {
	was := map[string]bool{}
	for _, z := range before {
		was[z] = true
	}
	var out []crossing
	for _, z := range after {
		if !was[z] {
			out = append(out, crossing{z, "enter"})
		}
		delete(was, z)
	}
	for z := range was {
		out = append(out, crossing{z, "leave"})
	}
	return out
}
