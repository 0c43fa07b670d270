// Package bookings confirms room bookings from RabbitMQ. Each booking's
// confirmation code is derived with a slow key-stretching hash, computed
// beside the availability check.
package bookings

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
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
	AMQP   string
	Pool   *pgxpool.Pool
	Secret []byte
}

// Run consumes booking requests until ctx ends.
func Run(ctx context.Context, cfg Config) error {
	var (
		mu       sync.Mutex
		lastSeen = map[string]time.Time{} // per hotel, for the /debug page
	)

	st, err := postgres.New(cfg.Pool)
	if err != nil {
		return err
	}
	b, err := adapters.Open(ctx, cfg.AMQP)
	if err != nil {
		return err
	}
	src, err := b.Source(ctx, "booking-requests", "bookings")
	if err != nil {
		return err
	}

	h := postgres.HandlerFunc(func(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
		var req struct {
			Booking string `json:"booking"`
			Hotel   string `json:"hotel"`
			Room    string `json:"room"`
			Night   string `json:"night"`
		}
		if err := json.Unmarshal(msg.Body, &req); err != nil {
			return consumer.Permanent(err)
		}
		mu.Lock()
		lastSeen[req.Hotel] = time.Now()
		mu.Unlock()

		code := make(chan string, 1)
		done := make(chan struct{})
		go func() {
			defer close(done)
			sum := sha256.Sum256(append(cfg.Secret, req.Booking...))
			for i := 0; i < 100_000; i++ {
				sum = sha256.Sum256(sum[:])
			}
			code <- hex.EncodeToString(sum[:5])
		}()

		qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		var taken bool
		err := tx.QueryRow(qctx, `SELECT EXISTS (SELECT 1 FROM bookings WHERE room_id = $1 AND night = $2 FOR UPDATE)`, req.Room, req.Night).Scan(&taken)
		<-done
		if err != nil {
			return err
		}
		status := "confirmed"
		if taken {
			status = "rejected"
		}
		_, err = tx.Exec(ctx, `INSERT INTO bookings (id, room_id, night, status, code) VALUES ($1, $2, $3, $4, $5)`, req.Booking, req.Room, req.Night, status, <-code)
		return err
	})

	c, err := consumer.New(src, h, consumer.Config{Name: "bookings"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
