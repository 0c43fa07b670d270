// Package cinema books admissions from the ticket scanners and serves the
// manager's nightly report.
package cinema

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

// Server holds the reporting database, reached through database/sql for
// the BI tool's driver.
type Server struct {
	reports *sql.DB
}

// NightlyReport serves GET /report?date=YYYY-MM-DD and stamps the report as viewed.
func (s *Server) NightlyReport(w http.ResponseWriter, r *http.Request) {
	date := r.URL.Query().Get("date")
	var admissions int
	if err := s.reports.QueryRowContext(r.Context(), `SELECT count(*) FROM admissions WHERE screened_on = $1`, date).Scan(&admissions); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if _, err := s.reports.ExecContext(r.Context(), `INSERT INTO report_views (report_date) VALUES ($1)`, date); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	_ = json.NewEncoder(w).Encode(map[string]int{"admissions": admissions})
}

// Run consumes scanner events until ctx ends.
func Run(ctx context.Context, pool *pgxpool.Pool, reports *sql.DB, broker adapters.Broker) error {
	st, err := postgres.New(pool)
	if err != nil {
		return fmt.Errorf("cinema: %w", err)
	}
	src, err := broker.Source(ctx, "scanners.admissions", "cinema-admissions")
	if err != nil {
		return fmt.Errorf("cinema: %w", err)
	}
	go func() {
		mux := http.NewServeMux()
		mux.HandleFunc("GET /report", (&Server{reports: reports}).NightlyReport)
		_ = http.ListenAndServe("127.0.0.1:8081", mux)
	}()
	c, err := consumer.New(src, admissionHandler{}, consumer.Config{Name: "cinema-admissions"}, middleware.Idempotency(st))
	if err != nil {
		return fmt.Errorf("cinema: %w", err)
	}
	return c.Run(ctx)
}
