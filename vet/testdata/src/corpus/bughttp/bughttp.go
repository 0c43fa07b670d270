// Package bughttp is a corpus handler package with a bug (see vet/corpus_test.go).
package bughttp

import (
	"context"
	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
	"net/http"
	"strings"
)

type handler struct{ client *http.Client }

func (h *handler) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	if _, err := tx.Exec(ctx, "INSERT INTO charges (id) VALUES ($1)", m.ID); err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "https://psp.example/charge", strings.NewReader(m.ID))
	if err != nil {
		return err
	}
	resp, err := h.client.Do(req) // want `use the outbox`
	if err != nil {
		return err
	}
	return resp.Body.Close()
}

func New() consumer.Handler {
	return postgres.HandlerFunc((&handler{client: http.DefaultClient}).handle)
}
