package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"go.uber.org/goleak"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/envtest"
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(runChild())
	}
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"))
}

func TestConfig(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	var out bytes.Buffer
	c, err := parseConfig(nil, env(map[string]string{"DATABASE_URL": "postgres://x"}), &out)
	require.NoError(t, err)
	require.Equal(t, "mem://", c.brokerURL, "BROKER_URL defaults to mem://")
	require.True(t, c.dedupe)
	require.Equal(t, 16, c.concurrency)
	require.Equal(t, "payments", c.source)

	c, err = parseConfig([]string{"-dedupe=false", "-concurrency", "3"}, env(map[string]string{"DATABASE_URL": "postgres://x", "BROKER_URL": "kafka://h:1"}), &out)
	require.NoError(t, err)
	require.False(t, c.dedupe)
	require.Equal(t, 3, c.concurrency)
	require.Equal(t, "kafka://h:1", c.brokerURL)

	_, err = parseConfig([]string{"-concurrency", "0"}, env(nil), &out)
	require.ErrorContains(t, err, "DATABASE_URL is not set")
	require.ErrorContains(t, err, "go run ./examples/quickstart")
	require.ErrorContains(t, err, "-concurrency must be >= 1")

	var stderr bytes.Buffer
	require.Equal(t, 2, run(nil, env(nil), &stderr))
	require.Contains(t, stderr.String(), "DATABASE_URL is not set")
	stderr.Reset()
	require.Equal(t, 0, run([]string{"-help"}, env(nil), &stderr))
	require.Contains(t, stderr.String(), "BROKER_URL")
	require.Equal(t, 1, run(nil, env(map[string]string{"DATABASE_URL": "postgres://127.0.0.1:1/x?connect_timeout=1", "BROKER_URL": "mem://"}), io.Discard))
}

// ledgerEnv is a fresh Postgres schema and an in-process Kafka.
type ledgerEnv struct {
	pool   *pgxpool.Pool
	dbURL  string
	schema string
	broker string
}

func newLedgerEnv(t *testing.T) *ledgerEnv {
	dbURL := envtest.Postgres(t)
	ctx := context.Background()
	schema := fmt.Sprintf("ledger_test_%d", rand.Uint32())
	pool, err := pgxpool.New(ctx, dbURL)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, "CREATE SCHEMA "+schema)
	require.NoError(t, err)
	t.Cleanup(func() {
		_, _ = pool.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
		pool.Close()
	})
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.DefaultNumPartitions(3))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return &ledgerEnv{pool: pool, dbURL: dbURL + "&search_path=" + schema, schema: schema,
		broker: "kafka://" + strings.Join(c.ListenAddrs(), ",") + "?tiers=100ms,1s"}
}

func (e *ledgerEnv) publish(t *testing.T, msgs ...*consumer.Message) {
	b, err := adapters.Open(context.Background(), e.broker)
	require.NoError(t, err)
	defer b.Close()
	require.NoError(t, b.Publish(context.Background(), "payments", msgs...))
}

// entries returns the ledger_entries rows per message ID.
func (e *ledgerEnv) entries(t *testing.T) map[string]int {
	rows, err := e.pool.Query(context.Background(), "SELECT message_id, count(*) FROM "+e.schema+".ledger_entries GROUP BY 1")
	if err != nil {
		return nil
	}
	out := map[string]int{}
	var id string
	var n int
	_, err = pgx.ForEachRow(rows, []any{&id, &n}, func() error { out[id] = n; return nil })
	require.NoError(t, err)
	return out
}

func pay(id, account string, cents int) *consumer.Message {
	return &consumer.Message{ID: id, Key: account, Body: fmt.Appendf(nil, `{"account":%q,"amount_cents":%d}`, account, cents)}
}

// The ledger's contract end to end on Kafka: effects in Postgres, the
// duplicate applied once with -dedupe and twice without, poison and
// malformed payments dead-lettered with their reasons, a clean stop.
// With -batch the same contract holds for the set-based batch handler.
// Every applied payment's ledger.applied event is in the outbox (see
// eventsCheck), published by the in-process relay, or with -relay=false by
// a separate relay, and on the broker.
func TestLedger(t *testing.T) {
	for _, tc := range []struct {
		dedupe bool
		batch  int
		relay  bool
	}{{true, 0, true}, {false, 0, true}, {true, 8, true}, {true, 0, false}} {
		dedupe := tc.dedupe
		t.Run(fmt.Sprintf("dedupe=%t,batch=%d,relay=%t", dedupe, tc.batch, tc.relay), func(t *testing.T) {
			e := newLedgerEnv(t)
			e.publish(t, pay("p1", "acc-17", 250), pay("p2", "acc-17", -50), pay("p1", "acc-17", 250), pay("p3", "acc-42", 1000),
				pay("bad", "poison", 1), &consumer.Message{ID: "junk", Body: []byte("{not json")})
			ctx, cancel := context.WithCancel(context.Background())
			var logs envtest.Buffer
			log := slog.New(slog.NewJSONHandler(&logs, nil))
			addr := freeAddr(t)
			cfg := config{brokerURL: e.broker, databaseURL: e.dbURL, dedupe: dedupe, concurrency: 4, source: "payments", consumer: consumerName,
				schema: e.schema, maxAttempts: 3, retryDelay: 50 * time.Millisecond, addr: addr, batch: tc.batch,
				events: "ledger-applied", relay: tc.relay}
			done := make(chan error, 1)
			go func() { done <- serve(ctx, cfg, log) }()

			want := map[string]int{"p1": 1, "p2": 1, "p3": 1}
			if !dedupe {
				want["p1"] = 2 // plain at-least-once: the duplicate shows
			}
			require.Eventually(t, func() bool {
				got := e.entries(t)
				return got["p1"] == want["p1"] && got["p2"] == 1 && got["p3"] == 1
			}, 30*time.Second, 50*time.Millisecond, "entries: %v\n%s", e.entries(t), &logs)

			b, err := adapters.Open(context.Background(), e.broker)
			require.NoError(t, err)
			defer b.Close()
			var dls []adapters.DeadLetter
			require.Eventually(t, func() bool {
				dls, err = b.DeadLetters(context.Background(), "payments", "ledger", 0)
				return err == nil && len(dls) == 2
			}, 30*time.Second, 100*time.Millisecond)
			reasons := map[string]string{}
			for _, d := range dls {
				reasons[d.Message.ID] = d.Reason()
			}
			require.Equal(t, map[string]string{"bad": "exhausted", "junk": "permanent"}, reasons)

			resp, err := http.Get("http://" + addr + "/metrics")
			require.NoError(t, err)
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			dead := 0
			for _, m := range regexp.MustCompile(`(?m)^oncely_messages_total\{consumer="ledger",outcome="dead_lettered",source="[^"]*"\} (\d+)$`).FindAllStringSubmatch(string(body), -1) {
				n, _ := strconv.Atoi(m[1])
				dead += n
			}
			require.Equal(t, 2, dead, "/metrics counts both dead letters")
			resp, err = http.Get("http://" + addr + "/readyz")
			require.NoError(t, err)
			resp.Body.Close()
			require.Equal(t, http.StatusOK, resp.StatusCode)

			ec := eventsCheck{pool: e.pool, schema: e.schema, outboxSchema: e.schema, destination: "ledger-applied", consumerName: consumerName}
			events := ec.want(t)
			require.Len(t, events, 2+want["p1"])
			ec.checkOutbox(t, events, tc.relay)

			cancel()
			require.NoError(t, <-done, "a stop drains and returns nil")
			if !tc.relay {
				ec.checkOutbox(t, events, false)
				stop := runRelay(t, e.pool, e.broker, e.schema)
				ec.checkOutbox(t, events, true)
				stop()
			}
			ec.checkBroker(t, b, "events-check", events)
			require.Equal(t, want, e.entries(t), "no effect after the stop")
			var balance int64
			require.NoError(t, e.pool.QueryRow(context.Background(), "SELECT balance_cents FROM "+e.schema+".ledger_accounts WHERE account = 'acc-17'").Scan(&balance))
			require.Equal(t, int64(250*want["p1"]-50), balance)
			require.Contains(t, logs.String(), `"msg":"ledger stopped cleanly"`)
		})
	}
}

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().String()
}
