// Package outbox is a stub of oncely's transactional outbox.
package outbox

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
)

type Outgoing struct {
	Destination string
	Message     *consumer.Message
}

func Send(ctx context.Context, tx pgx.Tx, destination string, msg *consumer.Message) error {
	return nil
}

func SendBatch(ctx context.Context, tx pgx.Tx, sends []Outgoing) error { return nil }

type Config struct{ Schema string }

type Relay struct{}

func NewRelay(pool *pgxpool.Pool, broker adapters.Broker, cfg Config) (*Relay, error) {
	return &Relay{}, nil
}

func (r *Relay) Run(ctx context.Context) error { return nil }
