// Package matchmaking records finished ranked matches and keeps players'
// ratings.
package matchmaking

import (
	"context"
	"encoding/json"
	"fmt"
	"math"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
	"github.com/redis/go-redis/v9"
)

type matchFinished struct {
	MatchID string `json:"match_id"`
	Season  string `json:"season"`
	Winner  string `json:"winner"`
	Loser   string `json:"loser"`
}

// ResultRecorder updates ratings and the season's win counters.
type ResultRecorder struct {
	ratings *ratingRepo
	cache   redis.Cmdable
	k       float64
}

// Handle applies one match result.
func (r *ResultRecorder) Handle(ctx context.Context, msg *consumer.Message) error {
	var m matchFinished
	if err := json.Unmarshal(msg.Body, &m); err != nil {
		return consumer.Permanent(fmt.Errorf("decode match: %w", err))
	}
	tx, ok := postgres.Tx(ctx)
	if !ok {
		return fmt.Errorf("matchmaking: no transaction for match %s", m.MatchID)
	}
	w, l, err := r.ratings.pair(ctx, tx, m.Winner, m.Loser)
	if err != nil {
		return err
	}
	expected := 1 / (1 + math.Pow(10, (l-w)/400))
	delta := r.k * (1 - expected)
	if err := r.ratings.adjust(ctx, tx, m.Winner, delta); err != nil {
		return err
	}
	if err := r.ratings.adjust(ctx, tx, m.Loser, -delta); err != nil {
		return err
	}
	return r.cache.Incr(ctx, "season:"+m.Season+":wins:"+m.Winner).Err() // want "season win counter incremented in Redis inside the claim transaction"
}
