package kennel

import (
	"context"
	"log/slog"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"

	"example.com/platform"

	"heldout8/shared/obs"
)

// subscription is one consumer of the kennel.
type subscription struct {
	source string
	handle func(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error
	extra  []consumer.Middleware
}

// Start builds every subscription's consumer; the claim is the last
// middleware of each chain, the platform's for the vet visits, which the
// clinic's audit requires.
func Start(ctx context.Context, pool *pgxpool.Pool, brokerURL string, log *slog.Logger) ([]*consumer.Consumer, error) {
	st, err := postgres.New(pool)
	if err != nil {
		return nil, err
	}
	b, err := adapters.Open(ctx, brokerURL)
	if err != nil {
		return nil, err
	}
	subs := map[string]subscription{
		"kennel-checkins": {source: "frontdesk.checkins", handle: checkIn, extra: []consumer.Middleware{middleware.Idempotency(st)}},
		"kennel-feeding":  {source: "staff.feedings", handle: fed, extra: []consumer.Middleware{middleware.Idempotency(st)}},
		"kennel-vet":      {source: "clinic.visits", handle: vetVisit, extra: []consumer.Middleware{platform.Dedupe(st)}},
	}
	var out []*consumer.Consumer
	for name, s := range subs {
		src, err := b.Source(ctx, s.source, name)
		if err != nil {
			return nil, err
		}
		mws := append([]consumer.Middleware{obs.Timing(log), middleware.Logging()}, s.extra...)
		c, err := consumer.New(src, postgres.HandlerFunc(s.handle), consumer.Config{Name: name}, mws...)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}
