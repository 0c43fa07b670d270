// Package rebates turns approved rebate claims into store credit.
package rebates

import (
	"context"
	"encoding/json"
	"fmt"

	"heldout3/rebates/internal/repo"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

// Service applies approved claims.
type Service struct {
	credits *repo.Repo[credit]
}

// NewService returns a Service storing credits in pool's database.
func NewService(pool *pgxpool.Pool) *Service {
	return &Service{credits: repo.New[credit](pool)}
}

func (s *Service) applyClaim(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var c claimApproved
	if err := json.Unmarshal(msg.Body, &c); err != nil {
		return consumer.Permanent(fmt.Errorf("rebates: decode claim: %w", err))
	}
	if _, err := tx.Exec(ctx, `UPDATE rebate_claims SET status = 'credited' WHERE id = $1`, c.ClaimID); err != nil {
		return fmt.Errorf("rebates: mark claim %s: %w", c.ClaimID, err)
	}
	return s.credits.Insert(ctx, credit{ClaimID: c.ClaimID, CustomerID: c.CustomerID, AmountCents: c.AmountCents, GrantedAt: c.ApprovedAt}) // want "credit inserted by a repository built over the pool, outside the claim's transaction"
}

// Run consumes approved claims until ctx is done.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "rebates.claims.approved", "rebates")
	if err != nil {
		return err
	}
	s := NewService(pool)
	c, err := consumer.New(src, postgres.HandlerFunc(s.applyClaim), consumer.Config{Name: "rebates"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
