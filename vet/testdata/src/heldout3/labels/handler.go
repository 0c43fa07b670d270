package labels

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/outbox"
	"github.com/redis/go-redis/v9"
)

type packed struct {
	ShipmentID string `json:"shipment_id"`
	Carrier    string `json:"carrier"`
	WeightG    int    `json:"weight_g"`
	Postcode   string `json:"postcode"`
}

type labelRequest struct {
	ShipmentID string `json:"shipment_id"`
	Service    string `json:"service"`
	WeightG    int    `json:"weight_g"`
}

type planner struct {
	rdb      *redis.Client
	instance string
}

func (p *planner) onPacked(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var s packed
	if err := json.Unmarshal(msg.Body, &s); err != nil {
		return consumer.Permanent(err)
	}
	release, err := lockShipment(ctx, p.rdb, s.ShipmentID, p.instance)
	if err != nil {
		return err
	}
	defer release()

	service, err := p.rdb.Get(ctx, "carrier-service:"+s.Carrier+":"+s.Postcode).Result()
	if err != nil || service == "" {
		service = "standard"
	}
	if _, err := tx.Exec(ctx, `UPDATE shipments SET state = 'label_requested', service = $2 WHERE id = $1`, s.ShipmentID, service); err != nil {
		return fmt.Errorf("labels: shipment %s: %w", s.ShipmentID, err)
	}
	body, err := json.Marshal(labelRequest{ShipmentID: s.ShipmentID, Service: service, WeightG: s.WeightG})
	if err != nil {
		return err
	}
	return outbox.Send(ctx, tx, "carrier."+s.Carrier+".label-requests", &consumer.Message{Key: s.ShipmentID, Body: body})
}
