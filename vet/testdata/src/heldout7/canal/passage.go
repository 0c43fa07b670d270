package canal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type passage struct {
	Boat  string   `json:"boat"`
	Locks []string `json:"locks"`
	When  string   `json:"when"`
}

type level struct {
	lock string
	cm   int
	err  error
}

// levels reads every lock's gauge at once and waits for all of them.
func (p *Passages) levels(ctx context.Context, locks []string) []level {
	ctx, cancel := context.WithTimeout(ctx, p.timeouts)
	defer cancel()
	out := make(chan level, len(locks))
	var wg sync.WaitGroup
	for _, l := range locks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cm, err := p.gauge(ctx, l)
			out <- level{lock: l, cm: cm, err: err}
		}()
	}
	wg.Wait()
	close(out)
	levels := make([]level, 0, len(locks))
	for lv := range out {
		levels = append(levels, lv)
	}
	return levels
}

func (p *Passages) gauge(ctx context.Context, lock string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.gauges+"/locks/"+lock+"/level", nil)
	if err != nil {
		return 0, err
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var v struct {
		OverSillCm int `json:"over_sill_cm"`
	}
	err = json.NewDecoder(resp.Body).Decode(&v)
	return v.OverSillCm, err
}

// Handle books a passage through every lock whose water is deep enough.
func (p *Passages) Handle(ctx context.Context, msg *consumer.Message) error {
	var ps passage
	if err := json.Unmarshal(msg.Body, &ps); err != nil {
		return consumer.Permanent(err)
	}
	tx, ok := postgres.Tx(ctx)
	if !ok {
		return errors.New("canal: no claim transaction")
	}
	for _, lv := range p.levels(ctx, ps.Locks) {
		if lv.err != nil {
			return fmt.Errorf("gauge %s: %w", lv.lock, lv.err)
		}
		if lv.cm < p.minCm {
			return fmt.Errorf("lock %s: %d cm over the sill, %d needed", lv.lock, lv.cm, p.minCm)
		}
	}
	for i, l := range ps.Locks {
		if _, err := tx.Exec(ctx, `INSERT INTO lockings (boat, lock, seq, day) VALUES ($1, $2, $3, $4)`, ps.Boat, l, i, ps.When); err != nil {
			return err
		}
	}
	return nil
}
