package planetarium

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"golang.org/x/sync/errgroup"
)

type booking struct {
	Show    string `json:"show"`
	Visitor string `json:"visitor"`
	Seats   int    `json:"seats"`
}

type boxOffice struct {
	log *slog.Logger
}

// book looks up the visitor's membership while it locks the show's row,
// then books the seats.
func (b *boxOffice) book(ctx context.Context, tx pgx.Tx, bk booking) error {
	var capacity, sold int
	var member bool
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { // want "goroutine"
		return tx.QueryRow(gctx, `SELECT exists(SELECT 1 FROM members WHERE visitor = $1)`, bk.Visitor).Scan(&member)
	})
	capErr := tx.QueryRow(ctx, `SELECT capacity, sold FROM shows WHERE id = $1 FOR UPDATE`, bk.Show).Scan(&capacity, &sold)
	if err := g.Wait(); err != nil {
		return fmt.Errorf("membership of %s: %w", bk.Visitor, err)
	}
	if capErr != nil {
		return fmt.Errorf("show %s: %w", bk.Show, capErr)
	}
	if sold+bk.Seats > capacity {
		return consumer.Permanent(fmt.Errorf("show %s sold out", bk.Show))
	}
	price := 1200
	if member {
		price = 800
	}
	if _, err := tx.Exec(ctx, `UPDATE shows SET sold = sold + $2 WHERE id = $1`, bk.Show, bk.Seats); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `INSERT INTO tickets (show, visitor, seats, price_cents) VALUES ($1, $2, $3, $4)`,
		bk.Show, bk.Visitor, bk.Seats, price*bk.Seats)
	return err
}
