package gym

import (
	"context"
	"encoding/json"

	"github.com/oncely/oncely/consumer"
)

type checkIn struct {
	Member string `json:"member"`
	Club   string `json:"club"`
}

// CheckIns counts visits per member; the count drives loyalty tiers.
type CheckIns struct {
	deps *Deps
}

// Handle increments the member's visit count.
func (c *CheckIns) Handle(ctx context.Context, msg *consumer.Message) error {
	var ci checkIn
	if err := json.Unmarshal(msg.Body, &ci); err != nil {
		return consumer.Permanent(err)
	}
	_, err := c.deps.Pool.Exec(ctx, `UPDATE members SET visits = visits + 1, last_club = $2 WHERE id = $1`, ci.Member, ci.Club)
	return err
}

// Run starts the check-in consumer.
func Run(ctx context.Context, src consumer.Source, deps *Deps) error {
	cfg := consumer.Config{Name: "gym-checkins"}
	c, err := consumer.New(src, &CheckIns{deps: deps}, cfg, deps.Middlewares...) // want "consumer without idempotency or AllowDuplicates"
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
