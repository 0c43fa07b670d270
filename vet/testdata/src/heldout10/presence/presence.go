// Package presence keeps "last seen" per user from heartbeat events on a
// Redis stream, caches it for the chat UI and fans it out to the live
// gateway. Heartbeats are state, not events: applying one twice is harmless.
package presence

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/redis/go-redis/v9"
)

// Config wires the service.
type Config struct {
	StreamURL string // redis://events:6379/1
	CacheAddr string
	NATSURL   string
	Pool      *pgxpool.Pool
}

// Run consumes heartbeats until ctx ends.
func Run(ctx context.Context, cfg Config) error {
	rdb := redis.NewClient(&redis.Options{Addr: cfg.CacheAddr})
	nc, err := nats.Connect(cfg.NATSURL)
	if err != nil {
		return err
	}

	var publish func(ctx context.Context, b []byte) error
	publish = func(_ context.Context, b []byte) error { return nc.Publish("presence.changed", b) }

	b, err := adapters.Open(ctx, cfg.StreamURL)
	if err != nil {
		return err
	}
	src, err := b.Source(ctx, "heartbeats", "presence")
	if err != nil {
		return err
	}

	h := consumer.HandlerFunc(func(ctx context.Context, msg *consumer.Message) error {
		var hb struct {
			User string    `json:"user"`
			At   time.Time `json:"at"`
		}
		if err := json.Unmarshal(msg.Body, &hb); err != nil {
			return consumer.Permanent(err)
		}
		if _, err := cfg.Pool.Exec(ctx, `INSERT INTO last_seen (user_id, at) VALUES ($1, $2)
			ON CONFLICT (user_id) DO UPDATE SET at = greatest(last_seen.at, EXCLUDED.at)`, hb.User, hb.At); err != nil {
			return err
		}
		if err := rdb.Set(ctx, "seen:"+hb.User, hb.At.Unix(), 10*time.Minute).Err(); err != nil {
			return err
		}
		return publish(ctx, msg.Body)
	})

	c, err := consumer.New(src, h, consumer.Config{
		Name:        "presence",
		Concurrency: 64,
		Duplicates:  consumer.AllowDuplicates("heartbeats are last-write-wins upserts (greatest), a cache set and a UI nudge: repeating one changes nothing"),
	})
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
