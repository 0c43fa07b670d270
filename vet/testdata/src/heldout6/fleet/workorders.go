// Package fleet schedules maintenance work orders for vehicles.
package fleet

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store"
	"github.com/oncely/oncely/store/postgres"
)

type faultReported struct {
	VehicleID string `json:"vehicle_id"`
	Code      string `json:"dtc"`
	Odometer  int    `json:"odometer_km"`
}

// Options configure the work-order handler.
type Options struct {
	GarageURL string
	Client    *http.Client
}

// Option sets one field of Options.
type Option func(*Options)

// WithGarage points work orders at the garage system.
func WithGarage(url string) Option { return func(o *Options) { o.GarageURL = url } }

// WithClient sets the HTTP client, http.DefaultClient by default.
func WithClient(c *http.Client) Option { return func(o *Options) { o.Client = c } }

// NewHandler returns the transactional work-order handler.
func NewHandler(opts ...Option) consumer.Handler {
	o := Options{Client: http.DefaultClient}
	for _, opt := range opts {
		opt(&o)
	}
	return postgres.HandlerFunc(func(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
		var f faultReported
		if err := json.Unmarshal(msg.Body, &f); err != nil {
			return consumer.Permanent(err)
		}
		var orderID int64
		if err := tx.QueryRow(ctx, `INSERT INTO work_orders (vehicle_id, dtc, odometer_km) VALUES ($1, $2, $3) RETURNING id`,
			f.VehicleID, f.Code, f.Odometer).Scan(&orderID); err != nil {
			return err
		}
		return o.reserveBay(ctx, orderID, f.VehicleID)
	})
}

func (o Options) reserveBay(ctx context.Context, orderID int64, vehicle string) error {
	body, _ := json.Marshal(map[string]any{"work_order": orderID, "vehicle": vehicle})
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, fmt.Sprintf("%s/bays/%d", o.GarageURL, orderID), bytes.NewReader(body))
	if err != nil {
		return err
	}
	resp, err := o.Client.Do(req) // want "HTTP PUT inside transactional handler"
	if err != nil {
		return err
	}
	return resp.Body.Close()
}

// Run starts the work-order consumer.
func Run(ctx context.Context, src consumer.Source, st store.Store, garage string) error {
	c, err := consumer.New(src, NewHandler(WithGarage(garage)), consumer.Config{Name: "fleet-workorders"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
