package currency

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// rateCache holds exchange rates to EUR, reloaded from the database in the
// background.
type rateCache struct {
	mu    sync.RWMutex
	rates map[string]float64
	pool  *pgxpool.Pool
	log   *slog.Logger
}

func (c *rateCache) get(code string) (float64, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	r, ok := c.rates[code]
	return r, ok
}

func (c *rateCache) load(ctx context.Context) error {
	rows, err := c.pool.Query(ctx, `SELECT code, to_eur FROM fx_rates`)
	if err != nil {
		return err
	}
	defer rows.Close()
	fresh := map[string]float64{"EUR": 1}
	c.mu.Lock()
	c.rates = fresh
	c.mu.Unlock()
	return nil
}

func (c *rateCache) refresh(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := c.load(ctx); err != nil {
				c.log.Warn("fx reload", "err", err)
			}
		}
	}
}
