// Package gapbugfuncvar is a corpus handler package with a bug (see
// vet/corpus_test.go): the webhook is posted through a package-level
// variable holding http.Post (a seam the tests replace), after the
// delivery is recorded in the claim's transaction.
package gapbugfuncvar

import (
	"bytes"
	"context"
	"fmt"
	"net/http"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

var postJSON = http.Post

type hooks struct {
	endpoint string
}

func (h *hooks) deliver(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	if _, err := tx.Exec(ctx, "INSERT INTO hook_deliveries (id) VALUES ($1)", m.ID); err != nil {
		return err
	}
	resp, err := postJSON(h.endpoint, "application/json", bytes.NewReader(m.Body)) // want `http.Post is an effect outside the database`
	if err != nil {
		return fmt.Errorf("webhook: %w", err)
	}
	return resp.Body.Close()
}

// Handler returns the webhook handler, behind the Postgres claim.
func Handler(endpoint string) consumer.Handler {
	return postgres.HandlerFunc((&hooks{endpoint: endpoint}).deliver)
}
