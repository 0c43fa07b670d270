// Package payroll collects clocked hours into timesheets.
package payroll

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

type shiftClosed struct {
	EmployeeID string    `json:"employee_id"`
	Start      time.Time `json:"start"`
	End        time.Time `json:"end"`
}

func recordShift(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var s shiftClosed
	if err := json.Unmarshal(msg.Body, &s); err != nil {
		return consumer.Permanent(err)
	}
	st := newStore(tx)
	day := s.Start.Truncate(24 * time.Hour)
	return st.AddHours(ctx, s.EmployeeID, day, int(s.End.Sub(s.Start).Minutes()))
}

// Run serves the admin API on mux and consumes clock.shifts.
func Run(ctx context.Context, broker adapters.Broker, pool *pgxpool.Pool, mux *http.ServeMux) error {
	admin := &Admin{store: newStore(pool)}
	mux.HandleFunc("POST /runs/{id}/approve", admin.Approve)
	claims, err := postgres.New(pool)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "clock.shifts", "payroll")
	if err != nil {
		return err
	}
	c, err := consumer.New(src, postgres.HandlerFunc(recordShift), consumer.Config{Name: "payroll"}, middleware.Idempotency(claims))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
