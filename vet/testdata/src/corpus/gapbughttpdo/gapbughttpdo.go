// Package gapbughttpdo is a corpus handler package with a bug (see
// vet/corpus_test.go): a request built with a method that changes
// something, sent with (*http.Client).Do from a transactional handler.
package gapbughttpdo

import (
	"context"
	"net/http"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type handler struct {
	client *http.Client
	base   string
}

func (h *handler) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	if _, err := tx.Exec(ctx, "INSERT INTO reservations (id) VALUES ($1)", m.ID); err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, h.base+"/reservations/"+m.ID, strings.NewReader(m.ID))
	if err != nil {
		return err
	}
	resp, err := h.client.Do(req) // want `\(\*http.Client\).Do is an effect outside the database`
	if err != nil {
		return err
	}
	return resp.Body.Close()
}

// New builds the handler.
func New(client *http.Client, base string) consumer.Handler {
	return postgres.HandlerFunc((&handler{client: client, base: base}).handle)
}
