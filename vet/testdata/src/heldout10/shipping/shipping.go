// Package shipping picks the cheapest carrier for each packed order from SQS:
// it asks every carrier's rate endpoint at once and stores the choice.
package shipping

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

// Config wires the service.
type Config struct {
	SQS      string
	Pool     *pgxpool.Pool
	Carriers map[string]string // name → rate endpoint
}

// Run consumes packed orders until ctx ends.
func Run(ctx context.Context, cfg Config) error {
	client := &http.Client{Timeout: 2 * time.Second}
	st, err := postgres.New(cfg.Pool)
	if err != nil {
		return err
	}
	b, err := adapters.Open(ctx, cfg.SQS)
	if err != nil {
		return err
	}
	src, err := b.Source(ctx, "orders-packed", "carrier-choice")
	if err != nil {
		return err
	}

	h := postgres.HandlerFunc(func(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
		var o struct {
			Order  string `json:"order"`
			Grams  int    `json:"grams"`
			Postal string `json:"postal"`
		}
		if err := json.Unmarshal(msg.Body, &o); err != nil {
			return consumer.Permanent(err)
		}

		type quote struct {
			carrier string
			cents   int64
		}
		var (
			mu     sync.Mutex
			quotes []quote
			wg     sync.WaitGroup
		)
		for name, endpoint := range cfg.Carriers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint+"?postal="+o.Postal, nil)
				if err != nil {
					return
				}
				resp, err := client.Do(req)
				if err != nil {
					return
				}
				defer resp.Body.Close()
				var r struct {
					Cents int64 `json:"cents"`
				}
				if json.NewDecoder(resp.Body).Decode(&r) != nil {
					return
				}
				mu.Lock()
				quotes = append(quotes, quote{name, r.Cents})
				mu.Unlock()
			}()
		}
		wg.Wait()
		if len(quotes) == 0 {
			return errors.New("no carrier quoted")
		}
		best := quotes[0]
		for _, q := range quotes[1:] {
			if q.cents < best.cents {
				best = q
			}
		}
		_, err := tx.Exec(ctx, `UPDATE shipments SET carrier = $2, quoted_cents = $3 WHERE order_id = $1`, o.Order, best.carrier, best.cents)
		return err
	})

	c, err := consumer.New(src, h, consumer.Config{Name: "carrier-choice"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
