package fraudscore

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// ruleSet is the scoring model the risk team publishes to S3.
type ruleSet struct {
	Version      string           `json:"version"`
	CountryRisk  map[string]int   `json:"country_risk"`
	MCCRisk      map[string]int   `json:"mcc_risk"`
	BlockAtScore int              `json:"block_at"`
	Velocity     map[string]int64 `json:"velocity_cents"`
}

// rules caches the current rule set, refetching it when it is older than ttl.
type rules struct {
	s3     *s3.Client
	bucket string
	key    string
	ttl    time.Duration

	mu      sync.Mutex
	current *ruleSet
	fetched time.Time
}

func (r *rules) get(ctx context.Context) (*ruleSet, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.current != nil && time.Since(r.fetched) < r.ttl {
		return r.current, nil
	}
	out, err := r.s3.GetObject(ctx, &s3.GetObjectInput{Bucket: &r.bucket, Key: &r.key})
	if err != nil {
		return nil, fmt.Errorf("fetch rules: %w", err)
	}
	defer out.Body.Close()
	var rs ruleSet
	if err := json.NewDecoder(out.Body).Decode(&rs); err != nil {
		return nil, fmt.Errorf("decode rules: %w", err)
	}
	r.current, r.fetched = &rs, time.Now()
	return r.current, nil
}
