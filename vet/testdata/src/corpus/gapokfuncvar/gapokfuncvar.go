// Package gapokfuncvar is a correct corpus handler package (see
// vet/corpus_test.go): the handler fetches the hook's configuration
// through a package-level variable holding http.Get (a seam the tests
// replace), and queues the webhook itself with outbox.Send.
package gapokfuncvar

import (
	"context"
	"fmt"
	"net/http"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/outbox"
	"github.com/oncely/oncely/store/postgres"
)

var fetch = http.Get

type hooks struct {
	configURL string
}

func (h *hooks) deliver(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	resp, err := fetch(h.configURL + "/" + m.Key)
	if err != nil {
		return fmt.Errorf("hook config: %w", err)
	}
	dest := resp.Header.Get("X-Destination")
	if err := resp.Body.Close(); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, "INSERT INTO hook_deliveries (id) VALUES ($1)", m.ID); err != nil {
		return err
	}
	return outbox.Send(ctx, tx, dest, m)
}

// Handler returns the webhook handler, behind the Postgres claim.
func Handler(configURL string) consumer.Handler {
	return postgres.HandlerFunc((&hooks{configURL: configURL}).deliver)
}
