package appointments

import (
	"context"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"

	"heldout4/appointments/apptdb"
)

// Run serves the front desk and confirms appointments until ctx ends.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker, addr string) error {
	desk := &FrontDesk{Q: apptdb.New(pool)}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /appointments/{id}/cancel", desk.Cancel)
	srv := &http.Server{Addr: addr, Handler: mux}
	go func() { _ = srv.ListenAndServe() }()
	defer srv.Close()

	src, err := broker.Source(ctx, "billing.deposit-paid", "appointment-confirm")
	if err != nil {
		return err
	}
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	c, err := consumer.New(src, &Confirmer{Now: time.Now}, consumer.Config{Name: "appointment-confirm"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
