// Package lateokdonechan is a held-out corpus package (fifth round): a
// lookup run in a goroutine with the handler's context and waited for on a
// done channel before the write.
package lateokdonechan

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type geo interface {
	Country(ctx context.Context, ip string) (string, error)
}

type handler struct{ geo geo }

func (h *handler) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	var country string
	var lookupErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		country, lookupErr = h.geo.Country(ctx, m.ID)
	}()
	<-done
	if lookupErr != nil {
		return lookupErr
	}
	_, err := tx.Exec(ctx, "INSERT INTO signups (id, country) VALUES ($1, $2)", m.ID, country)
	return err
}

func New(g geo) consumer.Handler { return postgres.HandlerFunc((&handler{geo: g}).handle) }
