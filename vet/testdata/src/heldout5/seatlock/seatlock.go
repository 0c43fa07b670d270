// Package seatlock assigns exam seats under a per-room Redis lock.
package seatlock

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
	"github.com/redis/go-redis/v9"
)

var errRoomBusy = errors.New("seatlock: room locked by another assigner")

type assign struct {
	RoomID    string `json:"room_id"`
	StudentID string `json:"student_id"`
}

// Assigner gives students seats.
type Assigner struct {
	rdb *redis.Client
}

func (a *Assigner) handle(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var in assign
	if err := json.Unmarshal(msg.Body, &in); err != nil {
		return consumer.Permanent(err)
	}
	lock := "lock:room:" + in.RoomID
	ok, err := a.rdb.SetNX(ctx, lock, msg.ID, 10*time.Second).Result()
	if err != nil {
		return err
	}
	if !ok {
		return errRoomBusy
	}
	defer a.rdb.Del(context.WithoutCancel(ctx), lock)
	var seat int
	if err := tx.QueryRow(ctx, `SELECT coalesce(max(seat), 0) + 1 FROM seats WHERE room_id = $1`, in.RoomID).Scan(&seat); err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `INSERT INTO seats (room_id, seat, student_id) VALUES ($1, $2, $3)`, in.RoomID, seat, in.StudentID)
	return err
}

// Run consumes seat assignments.
func Run(ctx context.Context, pool *pgxpool.Pool, src consumer.Source, rdb *redis.Client) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	a := &Assigner{rdb: rdb}
	c, err := consumer.New(src, postgres.HandlerFunc(a.handle), consumer.Config{Name: "seatlock"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
