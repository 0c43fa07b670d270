// Package enrollsync mirrors the student information system's enrollments.
package enrollsync

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"

	"heldout5/enrollsync/service"
	"heldout5/enrollsync/store"
)

type handler struct {
	sync *service.Sync
}

func (h handler) handle(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var c service.Change
	if err := json.Unmarshal(msg.Body, &c); err != nil {
		return consumer.Permanent(err)
	}
	return h.sync.Apply(ctx, tx, c)
}

// Run consumes enrollment changes.
func Run(ctx context.Context, pool *pgxpool.Pool, src consumer.Source) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	h := handler{sync: &service.Sync{Store: &store.Enrollments{Pool: pool}}}
	c, err := consumer.New(src, postgres.HandlerFunc(h.handle), consumer.Config{Name: "enrollsync"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
