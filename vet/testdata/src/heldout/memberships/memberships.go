// Package memberships keeps group membership in step with the groups
// service's events.
package memberships

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"

	"heldout/memberships/internal/members"
)

type membershipChange struct {
	GroupID string `json:"group_id"`
	UserID  string `json:"user_id"`
	Joined  bool   `json:"joined"`
}

func applyChange(ctx context.Context, tx pgx.Tx, _ string, c membershipChange) error {
	m := members.In(tx)
	var err error
	if c.Joined {
		err = m.Join(ctx, c.GroupID, c.UserID, time.Now())
	} else {
		err = m.Leave(ctx, c.GroupID, c.UserID)
	}
	if err != nil {
		return err
	}
	return m.Recount(ctx, c.GroupID)
}

// Run consumes groups.membership.
func Run(ctx context.Context, broker adapters.Broker, pool *pgxpool.Pool) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "groups.membership", "memberships")
	if err != nil {
		return err
	}
	c, err := consumer.New(src, typed(applyChange), consumer.Config{Name: "memberships"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
