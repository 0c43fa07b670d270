package fraud

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// signal is one provider's risk score, 0 (fine) to 100 (fraud).
type signal struct {
	Provider string
	Score    int
}

type provider struct {
	name string
	url  string
}

type scorer struct {
	providers []provider
	http      *http.Client
}

func (s *scorer) fetch(ctx context.Context, p provider, cardHash, ip string) (signal, error) {
	ctx, cancel := context.WithTimeout(ctx, 800*time.Millisecond)
	defer cancel()
	q := url.Values{"card": {cardHash}, "ip": {ip}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.url+"?"+q.Encode(), nil)
	if err != nil {
		return signal{}, err
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return signal{}, fmt.Errorf("fraud: %s: %w", p.name, err)
	}
	defer resp.Body.Close()
	var out struct {
		Score int `json:"score"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return signal{}, fmt.Errorf("fraud: %s: decode: %w", p.name, err)
	}
	return signal{Provider: p.name, Score: out.Score}, nil
}
