// Package effects seeds txescape's reports of effects outside the database
// and of calls through fields bound to the pool.
package effects

import (
	"context"
	"net/http"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store/postgres"
	"github.com/twmb/franz-go/pkg/kgo"
)

type handler struct {
	kafka *kgo.Client
	exec  func(ctx context.Context, sql string, args ...any) (pgx.CommandTag, error)
}

func (h *handler) handle(ctx context.Context, tx pgx.Tx, m *consumer.Message) error {
	_, _ = http.Get("https://example.com/" + m.ID)    // want `http.Get is an effect outside the database .*use the outbox`
	h.kafka.ProduceSync(ctx, &kgo.Record{Topic: "t"}) // want `\(\*kgo.Client\).ProduceSync is an effect outside the database`
	_ = http.Header{}.Get("x")                        // a header read: no effect
	h.exec(ctx, "INSERT INTO t VALUES (1)")           // want `exec runs outside the claim's transaction \(its field is bound to \*pgxpool.Pool.Exec`
	//oncely:allow txescape the endpoint is idempotent by message ID, reviewed
	_, _ = http.Post("https://example.com/"+m.ID, "text/plain", nil)
	return nil
}

func New(pool *pgxpool.Pool) consumer.Handler {
	h := &handler{exec: pool.Exec}
	return postgres.HandlerFunc(h.handle)
}
