package lighthouse

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"

	"heldout7/internal/beacondb"
)

type ping struct {
	Beacon  string    `json:"beacon"`
	At      time.Time `json:"at"`
	LampOK  bool      `json:"lamp_ok"`
	Battery int32     `json:"battery_pct"`
}

func (k *Keeper) ping(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var p ping
	if err := json.Unmarshal(msg.Body, &p); err != nil {
		return consumer.Permanent(err)
	}
	q := k.q.WithTx(tx)
	if err := q.RecordPing(ctx, beacondb.RecordPingParams{
		BeaconID: p.Beacon, ReceivedAt: p.At, LampOK: p.LampOK, BatteryPct: p.Battery,
	}); err != nil {
		return err
	}
	switch {
	case !p.LampOK:
		return q.RaiseFault(ctx, p.Beacon, p.At, "lamp")
	case p.Battery < 15:
		return q.RaiseFault(ctx, p.Beacon, p.At, "battery")
	}
	return nil
}
