// Package geo attaches coordinates to new addresses.
package geo

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type geocoder struct {
	cache *pgxpool.Pool
}

func (g *geocoder) handle(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
	var lat, lon float64
	err := g.cache.QueryRow(ctx, `SELECT lat, lon FROM geocode_cache WHERE postcode = $1`, msg.Headers["postcode"]).Scan(&lat, &lon)
	if err != nil {
		return fmt.Errorf("geocode %s: %w", msg.Headers["postcode"], err)
	}
	_, err = tx.Exec(ctx, `UPDATE addresses SET lat = $2, lon = $3 WHERE id = $1`, msg.Key, lat, lon)
	return err
}

// Run wires the geocoder.
func Run(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker) error {
	st, err := postgres.New(pool)
	if err != nil {
		return err
	}
	src, err := broker.Source(ctx, "addresses.created", "geocoder")
	if err != nil {
		return err
	}
	g := &geocoder{cache: pool}
	c, err := consumer.New(src, postgres.HandlerFunc(g.handle), consumer.Config{Name: "geocoder"}, standardChain(st)...)
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
