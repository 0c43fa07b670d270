// Package airline applies seat changes from the check-in app.
package airline

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"

	"heldout6/airline/sqlc"
)

type seatChange struct {
	Flight    string `json:"flight"`
	Passenger string `json:"passenger"`
	Seat      string `json:"seat"`
}

// SeatMap applies seat changes.
type SeatMap struct {
	q *sqlc.Queries
}

func (s *SeatMap) change(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var c seatChange
	if err := json.Unmarshal(msg.Body, &c); err != nil {
		return consumer.Permanent(err)
	}
	q := s.q
	q = q.WithTx(tx)
	if err := q.ReleaseSeat(ctx, c.Flight, c.Passenger); err != nil {
		return err
	}
	return q.AssignSeat(ctx, c.Flight, c.Seat, c.Passenger)
}

// Run starts the seat-change consumer.
func Run(ctx context.Context, src consumer.Source, pool *pgxpool.Pool) error {
	s := &SeatMap{q: sqlc.New(pool)}
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	c, err := consumer.New(src, postgres.HandlerFunc(s.change), consumer.Config{Name: "airline-seats"}, middleware.Idempotency(st))
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
