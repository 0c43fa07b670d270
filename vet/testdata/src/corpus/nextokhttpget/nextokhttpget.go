// Package nextokhttpget is a held-out corpus package (third round): an
// exchange rate read over HTTP before converting the amount in the claim's
// transaction.
package nextokhttpget

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type handler struct {
	client *http.Client
	rates  string
}

func (h *handler) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	resp, err := h.client.Get(h.rates + "?pair=EURUSD")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var rate struct{ Value float64 }
	if err := json.NewDecoder(resp.Body).Decode(&rate); err != nil {
		return err
	}
	_, err = tx.Exec(ctx, "INSERT INTO converted (id, rate) VALUES ($1, $2)", m.ID, rate.Value)
	return err
}

func New(c *http.Client) consumer.Handler {
	return postgres.HandlerFunc((&handler{client: c, rates: "https://rates.internal/v1"}).handle)
}
