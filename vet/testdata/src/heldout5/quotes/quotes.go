// Package quotes attaches reinsurer quotes to insurance quote requests.
package quotes

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

type request struct {
	QuoteID string `json:"quote_id"`
	Risk    string `json:"risk"`
}

// Quoter fetches the reinsurer's rate while it loads the local loading.
type Quoter struct {
	ReinsurerURL string
	HTTP         *http.Client
}

func (q *Quoter) reinsurerRate(ctx context.Context, risk string) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, q.ReinsurerURL+"/rates?risk="+risk, nil)
	if err != nil {
		return 0, err
	}
	resp, err := q.HTTP.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var out struct{ Rate float64 }
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return 0, err
	}
	return out.Rate, nil
}

func (q *Quoter) handle(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var r request
	if err := json.Unmarshal(msg.Body, &r); err != nil {
		return consumer.Permanent(err)
	}
	var (
		rate    float64
		rateErr error
		done    = make(chan struct{})
	)
	go func() {
		defer close(done)
		rate, rateErr = q.reinsurerRate(ctx, r.Risk)
	}()
	var loading float64
	err := tx.QueryRow(ctx, `SELECT loading FROM risk_loadings WHERE risk = $1`, r.Risk).Scan(&loading)
	<-done
	if err != nil {
		return err
	}
	if rateErr != nil {
		return rateErr
	}
	_, err = tx.Exec(ctx, `UPDATE quotes SET premium_rate = $2 WHERE id = $1`, r.QuoteID, rate*(1+loading))
	return err
}

// Run consumes quote requests.
func Run(ctx context.Context, pool *pgxpool.Pool, src consumer.Source, reinsurerURL string) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	q := &Quoter{ReinsurerURL: reinsurerURL, HTTP: http.DefaultClient}
	c, err := consumer.New(src, postgres.HandlerFunc(q.handle), consumer.Config{Name: "quotes"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
