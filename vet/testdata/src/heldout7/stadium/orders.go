package stadium

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"

	"heldout7/platform/kit"
	"heldout7/stadium/seating"
)

type order struct {
	Fixture string   `json:"fixture"`
	Section string   `json:"section"`
	Seats   []string `json:"seats"`
	Fan     string   `json:"fan"`
}

type boxOffice struct{ d *Deps }

func (b *boxOffice) sell(ctx context.Context, tx pgx.Tx, o order) error {
	left, err := b.d.Seats.Available(ctx, o.Fixture, o.Section)
	if err != nil {
		return err
	}
	if left < len(o.Seats) {
		return consumer.Permanent(fmt.Errorf("fixture %s section %s: %d left", o.Fixture, o.Section, left))
	}
	for _, s := range o.Seats {
		if err := b.d.Seats.Sell(ctx, tx, o.Fixture, s, o.Fan); err != nil {
			if errors.Is(err, seating.ErrTaken) {
				return consumer.Permanent(err)
			}
			return err
		}
	}
	_, err = tx.Exec(ctx, `INSERT INTO tickets (fixture, fan, seats) VALUES ($1, $2, $3)`, o.Fixture, o.Fan, o.Seats)
	return err
}

// Run consumes box-office orders until ctx ends.
func Run(ctx context.Context, d *Deps, broker adapters.Broker) error {
	src, err := broker.Source(ctx, "boxoffice.orders", "stadium-tickets")
	if err != nil {
		return fmt.Errorf("stadium: %w", err)
	}
	b := &boxOffice{d: d}
	c, err := consumer.New(src, postgres.HandlerFunc(kit.Typed(b.sell)), consumer.Config{Name: "stadium-tickets"},
		middleware.Logging(), middleware.Idempotency(d.Store))
	if err != nil {
		return fmt.Errorf("stadium: %w", err)
	}
	return c.Run(ctx)
}
