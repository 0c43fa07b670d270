// Package holdokrequest is a held-out corpus package: builds (but does not
// send) a request in the transaction, and sends it from the outbox relay.
package holdokrequest

import (
	"context"
	"net/http"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

func handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "https://psp.example/"+m.ID, nil)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, "INSERT INTO outbox (url) VALUES ($1)", req.URL.String())
	return err
}

// Relay sends outside any handler.
func Relay(c *http.Client, req *http.Request) error {
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	return resp.Body.Close()
}

var _ = postgres.HandlerFunc(handle)
