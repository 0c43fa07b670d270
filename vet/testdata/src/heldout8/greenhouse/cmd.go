package greenhouse

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
	"google.golang.org/grpc"

	"heldout8/greenhouse/gen/irrigationpb"
)

// Run consumes sensor readings from NATS.
func Run(ctx context.Context, pool *pgxpool.Pool, cc *grpc.ClientConn) error {
	ctrl := &Controller{
		irrigation: irrigationpb.NewIrrigationClient(cc),
		rules:      []rule{drySoil{threshold: 0.28}, heatWave{above: 34}},
	}
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	b, err := adapters.Open(ctx, "nats://greenhouse-nats:4222")
	if err != nil {
		return err
	}
	src, err := b.Source(ctx, "sensors.readings", "climate-controller")
	if err != nil {
		return err
	}
	c, err := consumer.New(src, ctrl, consumer.Config{Name: "climate-controller"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
