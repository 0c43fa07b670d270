// Package profiles stores public profiles, enriched with the avatar
// service's metadata.
package profiles

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

// Profiles stores profiles.
type Profiles struct {
	avatars string
	client  *http.Client
}

type avatarMeta struct {
	URL    string `json:"url"`
	Width  int    `json:"width"`
	Height int    `json:"height"`
}

func (p *Profiles) avatar(ctx context.Context, userID string) (avatarMeta, error) {
	u := p.avatars + "/v2/avatars/" + url.PathEscape(userID)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return avatarMeta{}, err
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return avatarMeta{}, fmt.Errorf("avatar %s: %w", userID, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return avatarMeta{}, nil
	}
	var m avatarMeta
	err = json.NewDecoder(resp.Body).Decode(&m)
	return m, err
}

func (p *Profiles) onProfileUpdated(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var ev struct {
		UserID      string `json:"user_id"`
		DisplayName string `json:"display_name"`
		Bio         string `json:"bio"`
	}
	if err := json.Unmarshal(msg.Body, &ev); err != nil {
		return consumer.Permanent(err)
	}
	av, err := p.avatar(ctx, ev.UserID)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx,
		`INSERT INTO public_profiles (user_id, display_name, bio, avatar_url) VALUES ($1, $2, $3, $4)
		 ON CONFLICT (user_id) DO UPDATE SET display_name = EXCLUDED.display_name, bio = EXCLUDED.bio, avatar_url = EXCLUDED.avatar_url`,
		ev.UserID, ev.DisplayName, ev.Bio, av.URL)
	return err
}

// Run consumes users.profile_updated.
func Run(ctx context.Context, broker adapters.Broker, pool *pgxpool.Pool, avatarsURL string) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	p := &Profiles{avatars: avatarsURL, client: &http.Client{Timeout: 2 * time.Second}}
	src, err := broker.Source(ctx, "users.profile_updated", "profiles")
	if err != nil {
		return err
	}
	c, err := consumer.New(src, postgres.HandlerFunc(p.onProfileUpdated), consumer.Config{Name: "profiles"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
