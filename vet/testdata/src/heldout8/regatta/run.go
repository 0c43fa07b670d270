package regatta

import (
	"context"
	"net/http"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"

	"heldout8/regatta/notify"
)

// Run serves the office UI and consumes finishes from NATS JetStream.
func Run(ctx context.Context, pool *pgxpool.Pool, natsURL string) error {
	nc, err := nats.Connect(natsURL)
	if err != nil {
		return err
	}
	js, err := nc.JetStream()
	if err != nil {
		return err
	}
	office := NewOffice(notify.NewLive(js))
	srv := &http.Server{Addr: ":8080", Handler: office}
	go srv.ListenAndServe()
	defer srv.Shutdown(context.WithoutCancel(ctx))

	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	b, err := adapters.Open(ctx, natsURL)
	if err != nil {
		return err
	}
	src, err := b.Source(ctx, "timing.finishes", "race-office")
	if err != nil {
		return err
	}
	c, err := consumer.New(src, postgres.HandlerFunc(office.RecordFinish), consumer.Config{Name: "race-office"},
		middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
