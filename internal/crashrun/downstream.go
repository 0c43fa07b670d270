package crashrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/middleware"
	"github.com/oncely/oncely/store/postgres"
)

// downstreamName is the consumer name of the end-to-end test's downstream
// consumer: its claims are its own, apart from the ledger's.
const downstreamName = "downstream"

// downstreamSQL creates the downstream's effect table. Like ledger_entries
// it has no unique constraint on event_id, so an event applied twice shows
// as a second row; id is the order the downstream applied events in.
const downstreamSQL = `CREATE TABLE %s (
	id         bigserial PRIMARY KEY,
	event_id   text   NOT NULL,
	payment_id text   NOT NULL,
	account    text   NOT NULL,
	seq        bigint NOT NULL
)`

// event is the body of the ledger's applied-payment event.
type event struct {
	PaymentID   string `json:"payment_id"`
	Account     string `json:"account"`
	AmountCents int64  `json:"amount_cents"`
	Seq         int64  `json:"seq"`
}

// downstream consumes the ledger's events in the harness process, as a
// separate oncely consumer with its own idempotency claims: each event
// inserts one row in the claim's transaction.
type downstream struct {
	table  string
	c      *consumer.Consumer
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
	err    error
}

// startDownstream creates the downstream's table and claims (in schema) and
// its Source on dest, and runs it until stop. The Source exists before the
// relay publishes anything, so no broker drops an event for want of a
// queue, group or stream.
func startDownstream(ctx context.Context, pool *pgxpool.Pool, broker adapters.Broker, schema, dest string) (*downstream, error) {
	d := &downstream{table: pgx.Identifier{schema, "downstream_events"}.Sanitize(), done: make(chan error, 1)}
	if _, err := pool.Exec(ctx, fmt.Sprintf(downstreamSQL, d.table)); err != nil {
		return nil, fmt.Errorf("crashtest: creating the downstream table: %w", err)
	}
	st, err := postgres.New(pool, postgres.Config{Schema: schema})
	if err != nil {
		return nil, fmt.Errorf("crashtest: downstream store: %w", err)
	}
	src, err := broker.Source(ctx, dest, downstreamName)
	if err != nil {
		_ = st.Close(ctx)
		return nil, fmt.Errorf("crashtest: downstream source %s: %w", dest, err)
	}
	h := postgres.HandlerFunc(func(ctx context.Context, tx pgx.Tx, msg *consumer.Message) error {
		var e event
		if err := json.Unmarshal(msg.Body, &e); err != nil {
			return consumer.Permanent(fmt.Errorf("event %s: %w", msg.ID, err))
		}
		_, err := tx.Exec(ctx, "INSERT INTO "+d.table+" (event_id, payment_id, account, seq) VALUES ($1, $2, $3, $4)",
			msg.ID, e.PaymentID, e.Account, e.Seq)
		return err
	})
	// OrderByKey (the default): one account's events one at a time, in
	// arrival order; accounts in parallel.
	c, err := consumer.New(src, h, consumer.Config{Name: downstreamName, Concurrency: 4,
		MaxInFlight: max(32, src.Capabilities().Prefetch), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, middleware.Idempotency(st))
	if err != nil {
		_ = src.Close(ctx)
		_ = st.Close(ctx)
		return nil, fmt.Errorf("crashtest: downstream consumer: %w", err)
	}
	d.c = c
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	d.cancel = cancel
	go func() {
		err := c.Run(runCtx)
		d.done <- errors.Join(err, st.Close(context.WithoutCancel(runCtx)))
	}()
	return d, nil
}

// stop ends the downstream consumer (it drains what it holds) and returns
// its error; later calls return the same.
func (d *downstream) stop() error {
	d.once.Do(func() {
		d.cancel()
		d.err = <-d.done
	})
	return d.err
}

// applied counts the distinct payments with prefix the downstream applied.
func (d *downstream) applied(ctx context.Context, pool *pgxpool.Pool, prefix string) (int, error) {
	var n int
	err := pool.QueryRow(ctx, "SELECT count(DISTINCT payment_id) FROM "+d.table+" WHERE starts_with(payment_id, $1)", prefix).Scan(&n)
	return n, err
}
