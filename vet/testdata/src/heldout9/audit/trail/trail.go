// Package trail appends every domain event to the audit trail.
package trail

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"

	"heldout9/audit/queries"
)

// Recorder embeds the pool-bound queries for the admin API's reads.
type Recorder struct {
	*queries.Queries
	pool *pgxpool.Pool
}

// NewRecorder returns a recorder over pool.
func NewRecorder(pool *pgxpool.Pool) *Recorder {
	return &Recorder{Queries: queries.New(pool), pool: pool}
}

// Ready reports whether the database answers.
func (r *Recorder) Ready(ctx context.Context) error { return r.pool.Ping(ctx) }

func (r *Recorder) record(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var ev struct {
		Actor  string `json:"actor"`
		Action string `json:"action"`
	}
	if err := json.Unmarshal(msg.Body, &ev); err != nil {
		return consumer.Permanent(err)
	}
	q := r.Queries.WithTx(tx)
	if err := q.AppendEvent(ctx, msg.ID, ev.Actor, ev.Action, msg.Body); err != nil {
		return err
	}
	return q.BumpSeq(ctx, ev.Actor)
}

// Start wires one audit consumer per audited stream.
func Start(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker, streams []string) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	r := NewRecorder(pool)
	h := postgres.HandlerFunc(r.record)
	for _, s := range streams {
		src, err := broker.Source(ctx, s, "audit")
		if err != nil {
			return err
		}
		c, err := consumer.New(src, h, consumer.Config{Name: "audit-" + s}, middleware.Idempotency(st))
		if err != nil {
			return err
		}
		go c.Run(ctx)
	}
	return nil
}
