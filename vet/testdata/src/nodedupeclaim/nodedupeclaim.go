// Package nodedupeclaim is a team's own idempotency middleware: it claims
// in its store and reports the claim, so its Deduplicating mark is not
// reported.
package nodedupeclaim

import (
	"context"

	"github.com/oncely/oncely/consumer"
)

type claims interface {
	Claim(ctx context.Context, id string) (bool, error)
}

func Dedupe(s claims) consumer.Middleware {
	return func(next consumer.Handler) consumer.Handler {
		return consumer.Deduplicating(consumer.HandlerFunc(func(ctx context.Context, m *consumer.Message) error {
			fresh, err := s.Claim(ctx, m.ID)
			if err != nil || !fresh {
				consumer.MarkDuplicate(ctx)
				return err
			}
			if err := next.Handle(ctx, m); err != nil {
				return err
			}
			consumer.MarkClaimed(ctx)
			return nil
		}))
	}
}
