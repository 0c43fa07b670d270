package main

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/envtest"
)

// TestLedgerEventsBrokers: on every real broker, the events destination does
// not exist when the ledger starts; the in-process relay's first Publish
// creates it, and every event is on it (consumed afterwards by a consumer
// of its own) with its ID, key and body, and in the outbox marked
// published. Catches: a Publish into a destination nobody created that
// reports success while the broker drops the message (the row would be
// marked, the event lost), and a consumer started after the events missing
// the ones published before it.
func TestLedgerEventsBrokers(t *testing.T) {
	for _, bc := range brokerCases() {
		t.Run(bc.name, func(t *testing.T) {
			e := newLedgerEnv(t)
			suffix := fmt.Sprintf("%08x", rand.Uint32())
			source, name, events, checker := "payments-evb-"+suffix, "ledger-evb-"+suffix, "applied-evb-"+suffix, "check-"+suffix
			brokerURL := bc.url(t)
			bc.topology(t, brokerURL, source, name, "", ledgerTiers)           // the ledger's destinations
			bc.topology(t, brokerURL, events, checker, "", defaultPolicyTiers) // the events' and the checker's: created by the relay and by checkBroker

			b, err := adapters.Open(context.Background(), brokerURL)
			require.NoError(t, err)
			defer b.Close()
			var msgs []*consumer.Message
			for i := range 20 {
				msgs = append(msgs, pay(fmt.Sprintf("p%02d", i), fmt.Sprintf("acc-%d", i%3), i+1))
			}
			require.NoError(t, b.Publish(context.Background(), source, msgs...))

			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var logs envtest.Buffer
			cfg := config{brokerURL: brokerURL, databaseURL: e.dbURL, dedupe: true, concurrency: 4, source: source, consumer: name,
				schema: e.schema, maxAttempts: 3, retryDelay: 50 * time.Millisecond, events: events, relay: true}
			done := make(chan error, 1)
			go func() { done <- serve(ctx, cfg, slog.New(slog.NewJSONHandler(&logs, nil))) }()

			ec := eventsCheck{pool: e.pool, schema: e.schema, outboxSchema: e.schema, destination: events, consumerName: name}
			require.Eventually(t, func() bool {
				var n int
				_ = e.pool.QueryRow(context.Background(), "SELECT count(*) FROM "+e.schema+".ledger_entries").Scan(&n) // fails until serve created the table
				return n == len(msgs)
			}, 90*time.Second, 50*time.Millisecond, "payments not applied\n%s", &logs)
			want := ec.want(t)
			require.Len(t, want, len(msgs))
			ec.checkOutbox(t, want, true)
			ec.checkBroker(t, b, checker, want)

			cancel()
			require.NoError(t, <-done, "consumer and relay stop cleanly\n%s", &logs)
		})
	}
}
