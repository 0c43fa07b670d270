// Package gapokhttpget is a correct corpus handler package (see
// vet/corpus_test.go): a GET request, a read, sent with (*http.Client).Do
// from a transactional handler.
package gapokhttpget

import (
	"context"
	"net/http"

	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
)

type handler struct {
	client *http.Client
	base   string
}

func (h *handler) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.base+"/avatars/"+m.ID, nil)
	if err != nil {
		return err
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = tx.Exec(ctx, "UPDATE profiles SET avatar_status = $2 WHERE id = $1", m.ID, resp.StatusCode)
	return err
}

// New builds the handler.
func New(client *http.Client, base string) consumer.Handler {
	return postgres.HandlerFunc((&handler{client: client, base: base}).handle)
}
