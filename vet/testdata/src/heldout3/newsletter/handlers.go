package newsletter

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
)

type subscription struct {
	Email  string   `json:"email"`
	Lists  []string `json:"lists"`
	Source string   `json:"source"`
}

// subscribeHandler adds an address to its lists and counts sign-ups per
// source for the growth dashboard.
type subscribeHandler struct {
	pool *pgxpool.Pool
}

func (h *subscribeHandler) Handle(ctx context.Context, msg *consumer.Message) error {
	var s subscription
	if err := json.Unmarshal(msg.Body, &s); err != nil {
		return consumer.Permanent(err)
	}
	email := strings.ToLower(strings.TrimSpace(s.Email))
	for _, l := range s.Lists {
		if _, err := h.pool.Exec(ctx,
			`INSERT INTO list_members (list, email) VALUES ($1, $2) ON CONFLICT DO NOTHING`, l, email); err != nil {
			return fmt.Errorf("newsletter: subscribe %s to %s: %w", email, l, err)
		}
	}
	_, err := h.pool.Exec(ctx,
		`INSERT INTO signup_counts (source, day, n) VALUES ($1, current_date, 1)
		 ON CONFLICT (source, day) DO UPDATE SET n = signup_counts.n + 1`, s.Source)
	return err
}

// unsubscribeHandler removes an address from every list.
type unsubscribeHandler struct {
	pool *pgxpool.Pool
}

func (h *unsubscribeHandler) Handle(ctx context.Context, msg *consumer.Message) error {
	var s subscription
	if err := json.Unmarshal(msg.Body, &s); err != nil {
		return consumer.Permanent(err)
	}
	_, err := h.pool.Exec(ctx, `DELETE FROM list_members WHERE email = $1`, strings.ToLower(strings.TrimSpace(s.Email)))
	return err
}
