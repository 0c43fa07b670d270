// Package tracker records login sessions.
package tracker

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"

	"heldout9/sessions/internal/geoip"
)

type loggerKey struct{}

func withLogger(ctx context.Context, l *slog.Logger) context.Context {
	return context.WithValue(ctx, loggerKey{}, l)
}

func logger(ctx context.Context) *slog.Logger {
	if l, ok := ctx.Value(loggerKey{}).(*slog.Logger); ok {
		return l
	}
	return slog.Default()
}

// Tracker records sessions; it remembers the last countries seen per user
// to flag a change of country.
type Tracker struct {
	geo *geoip.Client
	log *slog.Logger

	mu   sync.Mutex
	last map[string]string
}

type login struct {
	User string   `json:"user"`
	IPs  []string `json:"ips"`
}

func (t *Tracker) login(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	ctx = withLogger(ctx, t.log.With("message", msg.ID))
	var l login
	if err := json.Unmarshal(msg.Body, &l); err != nil {
		return consumer.Permanent(err)
	}
	countries := make([]string, len(l.IPs))
	var wg sync.WaitGroup
	for i, ip := range l.IPs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := t.geo.Country(ctx, ip)
			if err != nil {
				logger(ctx).Warn("geoip", "ip", ip, "err", err)
				return
			}
			countries[i] = c
		}()
	}
	wg.Wait()
	country := ""
	if len(countries) > 0 {
		country = countries[0]
	}
	t.mu.Lock()
	changed := t.last[l.User] != "" && t.last[l.User] != country
	t.last[l.User] = country
	t.mu.Unlock()
	if changed {
		logger(ctx).Info("country changed", "user", l.User)
	}
	_, err := tx.Exec(ctx, `INSERT INTO sessions (id, user_id, country, flagged) VALUES ($1, $2, $3, $4)`, msg.ID, l.User, country, changed)
	return err
}

func (t *Tracker) logout(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	_, err := tx.Exec(ctx, `UPDATE sessions SET ended_at = now() WHERE user_id = $1 AND ended_at IS NULL`, msg.Key)
	return err
}

// Start wires the session consumers.
func Start(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker, geo *geoip.Client, log *slog.Logger) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	t := &Tracker{geo: geo, log: log, last: map[string]string{}}
	in, err := broker.Source(ctx, "auth.login", "sessions")
	if err != nil {
		return err
	}
	out, err := broker.Source(ctx, "auth.logout", "sessions")
	if err != nil {
		return err
	}
	c1, err := consumer.New(in, postgres.HandlerFunc(t.login), consumer.Config{Name: "sessions-login"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	c2, err := consumer.New(out, postgres.HandlerFunc(t.logout), consumer.Config{Name: "sessions-logout"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	go c1.Run(ctx)
	go c2.Run(ctx)
	return nil
}
