// Package rewards grants points for purchases and keeps a leaderboard.
package rewards

import (
	"context"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
	"github.com/redis/go-redis/v9"
)

type granter struct {
	board redis.Cmdable
}

func (g *granter) grant(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	points, err := strconv.Atoi(msg.Headers["points"])
	if err != nil {
		return consumer.Permanent(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO points (user_id, points, msg_id) VALUES ($1, $2, $3)`, msg.Key, points, msg.ID); err != nil {
		return fmt.Errorf("points: %w", err)
	}
	if err := g.board.Incr(ctx, "board:"+msg.Key).Err(); err != nil { // want "outbox"
		return fmt.Errorf("leaderboard: %w", err)
	}
	return nil
}

// Run wires the rewards consumer.
func Run(ctx context.Context, pool *pgxpool.Pool, rdb *redis.Client, broker adapters.Broker) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "purchases", "rewards")
	if err != nil {
		return err
	}
	g := &granter{board: rdb}
	c, err := consumer.New(src, postgres.HandlerFunc(g.grant), consumer.Config{Name: "rewards"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
