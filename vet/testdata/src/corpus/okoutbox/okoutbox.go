// Package okoutbox is a corpus handler package (see vet/corpus_test.go).
package okoutbox

import (
	"context"
	"encoding/json"
	"github.com/jackc/pgx/v5"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
	"net/http"
)

type event struct{ Order, Trace string }

// trace reads a header: no request, no effect.
func trace(h http.Header) string { return h.Get("traceparent") }

// handle publishes through the outbox table, in the claim's transaction.
func handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	body, err := json.Marshal(event{Order: m.ID, Trace: trace(http.Header{})})
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, "INSERT INTO outbox (topic, body) VALUES ('orders', $1)", body)
	return err
}

func Wire(src consumer.Source, st *postgres.Store) (*consumer.Consumer, error) {
	return consumer.New(src, postgres.HandlerFunc(handle), consumer.Config{Name: "orders-out"}, middleware.Idempotency(st))
}
