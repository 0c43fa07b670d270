// Package postgres is a stub of oncely's Postgres store.
package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
)

type Store struct{}

func New(pool *pgxpool.Pool) (*Store, error) { return &Store{}, nil }

func (s *Store) Process(ctx context.Context, consumer, messageID string, fn func(ctx context.Context) error) (bool, error) {
	return false, fn(ctx)
}

func Tx(ctx context.Context) (pgx.Tx, bool) { return nil, false }

func HandlerFunc(f func(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error) consumer.Handler {
	return consumer.HandlerFunc(func(ctx context.Context, msg *consumer.Message) error { return f(ctx, nil, msg) })
}

func (s *Store) ProcessBatch(ctx context.Context, consumer string, ids []string, fn func(ctx context.Context, fresh []int) error) ([]int, error) {
	return nil, fn(ctx, nil)
}

func BatchHandlerFunc(f func(ctx context.Context, tx pgx.Tx, msgs []*consumer.Message) error) consumer.Handler {
	return consumer.HandlerFunc(func(ctx context.Context, msg *consumer.Message) error { return f(ctx, nil, []*consumer.Message{msg}) })
}
