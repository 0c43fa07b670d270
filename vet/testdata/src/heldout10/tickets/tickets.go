// Package tickets applies support-desk events from Kafka. Most of them land in
// the desk's Postgres; the SLA report still lives in the old MySQL-era
// reporting database, reached through database/sql.
package tickets

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

// Config wires the service.
type Config struct {
	Kafka     string // kafka://broker-1:9092,broker-2:9092
	Pool      *pgxpool.Pool
	ReportDSN string
}

type event struct {
	Ticket   string `json:"ticket"`
	Agent    string `json:"agent"`
	Priority int    `json:"priority"`
	Minutes  int    `json:"minutes"`
}

// Run consumes ticket events until ctx ends.
func Run(ctx context.Context, cfg Config) error {
	reports, err := sql.Open("pgx", cfg.ReportDSN) // driver registered by main
	if err != nil {
		return err
	}
	defer reports.Close()

	st, err := postgres.New(cfg.Pool)
	if err != nil {
		return err
	}
	b, err := adapters.Open(ctx, cfg.Kafka)
	if err != nil {
		return err
	}
	src, err := b.Source(ctx, "desk.tickets", "ticket-projector")
	if err != nil {
		return err
	}

	h := postgres.HandlerFunc(func(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
		var ev event
		if err := json.Unmarshal(msg.Body, &ev); err != nil {
			return consumer.Permanent(err)
		}
		switch msg.Headers["type"] {
		case "ticket.opened":
			_, err := tx.Exec(ctx, `INSERT INTO tickets (id, priority, status) VALUES ($1, $2, 'open') ON CONFLICT (id) DO NOTHING`, ev.Ticket, ev.Priority)
			return err
		case "ticket.assigned":
			_, err := tx.Exec(ctx, `UPDATE tickets SET agent = $2 WHERE id = $1`, ev.Ticket, ev.Agent)
			return err
		case "ticket.resolved":
			if _, err := tx.Exec(ctx, `UPDATE tickets SET status = 'resolved' WHERE id = $1`, ev.Ticket); err != nil {
				return err
			}
			_, err := reports.ExecContext(ctx, `INSERT INTO sla_minutes (ticket, agent, minutes) VALUES ($1, $2, $3)`, ev.Ticket, ev.Agent, ev.Minutes) // want "."
			return err
		default:
			return consumer.Permanent(fmt.Errorf("unknown ticket event %q", msg.Headers["type"]))
		}
	})

	c, err := consumer.New(src, h, consumer.Config{Name: "ticket-projector"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
