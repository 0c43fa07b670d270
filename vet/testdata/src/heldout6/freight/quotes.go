// Package freight prices shipments with the carrier's published rates.
package freight

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

type shipmentBooked struct {
	ID       string `json:"id"`
	Lane     string `json:"lane"`
	WeightKg int64  `json:"weight_kg"`
}

type rateCard struct {
	CentsPerKg int64 `json:"cents_per_kg"`
}

// Pricer reads the carrier's rate card.
type Pricer struct {
	HTTP    *http.Client
	RateAPI string
}

func (p *Pricer) rate(ctx context.Context, lane string) (rateCard, error) {
	var rc rateCard
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s/lanes/%s/rate", p.RateAPI, lane), nil)
	if err != nil {
		return rc, err
	}
	resp, err := p.HTTP.Do(req)
	if err != nil {
		return rc, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return rc, fmt.Errorf("freight: rate card %s: %s", lane, resp.Status)
	}
	return rc, json.NewDecoder(resp.Body).Decode(&rc)
}

func (p *Pricer) price(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var s shipmentBooked
	if err := json.Unmarshal(msg.Body, &s); err != nil {
		return consumer.Permanent(err)
	}
	rc, err := p.rate(ctx, s.Lane)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `UPDATE shipments SET price_cents = $2 WHERE id = $1`, s.ID, rc.CentsPerKg*s.WeightKg)
	return err
}

// Run starts the pricing consumer.
func Run(ctx context.Context, src consumer.Source, p *Pricer, st *postgres.Store) error {
	c, err := consumer.New(src, postgres.HandlerFunc(p.price), consumer.Config{Name: "freight-pricing"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
