package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"go.uber.org/goleak"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/adapters/memory"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/envtest"
	"github.com/oncely/oncely/internal/kafkatest"
	"github.com/oncely/oncely/internal/pgtest"
	"github.com/oncely/oncely/retry"
)

// HTTP keep-alive connections of the SQS client may outlive a test.
func TestMain(m *testing.M) {
	if os.Getenv(asCLIEnv) == "1" { // a crash test's CLI process
		main()
	}
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"))
}

// asCLIEnv set to 1 makes the test binary run as the oncely command, with
// its arguments: the crash tests start it as a process and kill it.
const asCLIEnv = "ONCELY_TEST_AS_CLI"

// cli runs one command line and returns its exit code, stdout and stderr.
func cli(t *testing.T, env map[string]string, opts []adapters.Option, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	a := newApp(&out, &errb, func(k string) string { return env[k] })
	a.openOpts = opts
	a.memoryShared = opts != nil
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	code := a.run(ctx, args)
	return code, out.String(), errb.String()
}

func TestHelpOnEveryCommand(t *testing.T) {
	for _, args := range [][]string{
		{"--help"}, {"migrate", "--help"}, {"prune", "--help"}, {"dlq", "--help"}, {"dlq", "list", "--help"}, {"dlq", "show", "-h"},
		{"dlq", "redrive", "--help"}, {"dlq", "purge", "--help"}, {"lag", "--help"}, {"publish", "--help"}, {"dev", "--help"}, {"dev", "kafka", "--help"}, {"crashtest", "--help"}, {"relay", "--help"}, {"console", "--help"},
		{"outbox", "--help"}, {"outbox", "dead", "--help"}, {"outbox", "redrive", "--help"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			code, out, errs := cli(t, nil, nil, args...)
			require.Equal(t, 0, code, errs)
			require.Contains(t, out, "Usage: oncely")
			require.Empty(t, errs)
		})
	}
}

func TestUsageErrorsSayWhatToDo(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{nil, []string{"oncely needs a command", "migrate"}},
		{[]string{"frobnicate"}, []string{`unknown command "frobnicate"`, "dlq", "oncely --help"}},
		{[]string{"dlq", "frob"}, []string{`unknown command "frob" for oncely dlq`, "redrive", "purge"}},
		{[]string{"dlq", "purge", "--broker", "mem://", "--source", "s", "--consumer", "c"}, []string{"standard input is not a terminal", "--yes"}},
		{[]string{"dlq", "purge", "--id", ""}, []string{"--id is empty"}},
		{[]string{"dlq", "list"}, []string{"--broker (or BROKER_URL)", "kafka://", "--source", "--consumer", "dlq list --help"}},
		{[]string{"dlq", "list", "--broker", "mem://", "--source", "s", "--consumer", "c", "extra"}, []string{`unexpected arguments ["extra"]`}},
		{[]string{"dlq", "redrive", "--reason", "tired"}, []string{`unknown --reason "tired"`, "exhausted"}},
		{[]string{"lag", "--nope"}, []string{"flag provided but not defined: -nope", "lag --help"}},
		{[]string{"migrate"}, []string{"--database-url or DATABASE_URL"}},
		{[]string{"migrate", "--database-url", "postgres://x", "--schema", "Bad-Name"}, []string{"--schema", "is not a valid name"}},
		{[]string{"crashtest", "--brokers", "mem"}, []string{`unknown broker "mem"`}},
		// mem:// dies with the command: nothing published reaches anyone.
		{[]string{"publish", "--broker", "mem://", "--source", "s", "--id", "m1", "--body", "x"}, []string{"mem:// is a broker inside one process", "amqp://"}},
		{[]string{"lag", "--broker", "MEM://", "--source", "s", "--consumer", "c"}, []string{"mem:// is a broker inside one process"}},
		{[]string{"crashtest", "--end-to-end", "--dedupe", "both"}, []string{"--end-to-end needs --dedupe true"}},
		{[]string{"crashtest", "--instances", "1,0"}, []string{`--instances "1,0": want comma-separated integers >= 1`}},
		{[]string{"crashtest", "--handler-batch", "x"}, []string{`--handler-batch "x": want comma-separated integers >= 0`}},
		{[]string{"crashtest", "--handler-batch", "0,10", "--dedupe", "false"}, []string{"--handler-batch above 1 needs dedupe"}},
		{[]string{"crashtest", "--timed-every", "0"}, []string{"--timed-every must be >= 1"}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, _, errs := cli(t, nil, nil, tc.args...)
			require.Equal(t, 2, code, errs)
			for _, w := range tc.want {
				require.Contains(t, errs, w)
			}
		})
	}
	code, _, errs := cli(t, nil, nil, "lag", "--broker", "pulsar://x", "--source", "s", "--consumer", "c")
	require.Equal(t, 1, code)
	require.Contains(t, errs, `unsupported broker URL scheme "pulsar"`)
	require.Contains(t, errs, "check --broker / BROKER_URL")
}

// seed publishes five payments to source and runs consumer name until all
// settled: p2 fails permanently, p4 until its attempts are exhausted.
func seed(t *testing.T, url string, opts []adapters.Option, source, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := adapters.Open(ctx, url, opts...)
	require.NoError(t, err)
	defer b.Close()
	var msgs []*consumer.Message
	for i := range 5 {
		msgs = append(msgs, &consumer.Message{ID: fmt.Sprintf("p%d", i), Key: fmt.Sprintf("k%d", i), Body: fmt.Appendf(nil, `{"n":%d}`, i)})
	}
	require.NoError(t, b.Publish(ctx, source, msgs...))
	src, err := b.Source(ctx, source, name)
	require.NoError(t, err)
	var mu sync.Mutex
	final := 0
	done := make(chan struct{})
	h := consumer.HandlerFunc(func(_ context.Context, m *consumer.Message) error {
		switch m.ID {
		case "p2":
			return consumer.Permanent(fmt.Errorf("cannot decode %s", m.ID))
		case "p4":
			return fmt.Errorf("downstream said no to %s", m.ID)
		}
		return nil
	})
	obs := observer(func(ev consumer.Event) {
		mu.Lock()
		defer mu.Unlock()
		if ev.Outcome == consumer.OutcomeProcessed || ev.Outcome == consumer.OutcomeDeadLettered {
			if final++; final == 5 {
				close(done)
			}
		}
	})
	c, err := consumer.New(src, h, consumer.Config{Duplicates: consumer.AllowDuplicates("test: counts deliveries, not effects"), Name: name, Observer: obs,
		Retry: retry.Policy{MaxAttempts: 2, InitialInterval: 100 * time.Millisecond, MaxInterval: 100 * time.Millisecond}})
	require.NoError(t, err)
	go func() { _ = c.Run(ctx) }()
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("seeding did not settle every message")
	}
	require.NoError(t, c.Stop(ctx))
}

type observer func(consumer.Event)

func (f observer) Settled(_ context.Context, ev consumer.Event) { f(ev) }
func (observer) BreakerChanged(bool)                            {}

func TestDLQAndLagMemory(t *testing.T) {
	b := memory.NewBroker()
	testDLQ(t, "mem://", []adapters.Option{adapters.WithMemoryBroker(b)})
}

// TestDLQAndLagKafka runs on the Kafka in KAFKA_BROKERS (required under
// CI=true), or on kfake outside CI when it is unset.
func TestDLQAndLagKafka(t *testing.T) {
	addrs := kafkatest.Brokers(t, kfake.NumBrokers(1), kfake.DefaultNumPartitions(1))
	testDLQ(t, "kafka://"+strings.Join(addrs, ",")+"?tiers=100ms&partitions=2", nil)
}

func TestDLQAndLagSQS(t *testing.T) {
	testDLQ(t, "sqs://us-east-1?endpoint="+envtest.SQS(t)+"&visibility_timeout=5s&wait=1", nil)
}

func TestDLQAndLagRabbitMQ(t *testing.T) {
	testDLQ(t, envtest.RabbitMQ(t)+"?tiers=100ms", nil)
}

// testDLQ drives dlq list, show, redrive (dry run, filters, rate) and lag
// against url through the command line.
func testDLQ(t *testing.T, url string, opts []adapters.Option) {
	// Unique names: a real broker keeps topics and consumer groups.
	suffix := rand.Uint32()
	source, name := fmt.Sprintf("payments-%d", suffix), fmt.Sprintf("ledger-%d", suffix)
	seed(t, url, opts, source, name)
	env := map[string]string{"BROKER_URL": url}
	sel := []string{"--source", source, "--consumer", name}
	run := func(args ...string) string {
		t.Helper()
		code, out, errs := cli(t, env, opts, append(args, sel...)...)
		require.Equal(t, 0, code, "%v: %s", args, errs)
		return out
	}

	out := run("dlq", "list")
	require.Contains(t, out, fmt.Sprintf("dead letters of source %s, consumer %s", source, name))
	require.Contains(t, out, ": 2\n")
	require.Regexp(t, regexp.MustCompile(`(?m)^ID\s+REASON\s+ATTEMPTS\s+AGE\s+COPIES\s+ERROR$`), out)
	require.Regexp(t, regexp.MustCompile(`(?m)^p2\s+permanent\s+1\s+\d+s\s+1\s+permanent: cannot decode p2$`), out)
	require.Regexp(t, regexp.MustCompile(`(?m)^p4\s+exhausted\s+2\s+\d+s\s+1\s+downstream said no to p4$`), out)

	out = run("dlq", "show", "--id", "p4")
	for _, want := range []string{"message p4", "source:    " + source, "consumer:  " + name, "reason:    exhausted", "attempts:  2",
		"error:     downstream said no to p4", "key:       k4", "oncely-dead-letter-reason: exhausted", `body (7 bytes):` + "\n" + `    {"n":4}`} {
		require.Contains(t, out, want)
	}
	require.NotContains(t, out, "message p2")
	code, _, errs := cli(t, env, opts, append([]string{"dlq", "show", "--id", "nope"}, sel...)...)
	require.Equal(t, 1, code)
	require.Contains(t, errs, `no dead letter with ID "nope"`)
	require.Contains(t, errs, "oncely dlq list")

	testDLQJSON(t, run, source, name)
	testNoSource(t, env, opts, source, name)
	testNoConsumer(t, env, opts, url, source, name)
	testRedrivePlan(t, env, opts, sel, name)

	out = run("dlq", "redrive", "--dry-run")
	require.Contains(t, out, "dry run: would redrive 2 of 2 dead letters")
	out = run("dlq", "list")
	require.Contains(t, out, ": 2\n", "a dry run changes nothing")

	out = run("dlq", "redrive", "--reason", "exhausted", "--rate", "50")
	require.Contains(t, out, fmt.Sprintf("redriven 1 of 2 dead letters of source %s, consumer %s back to %s; 1 left in place by the filters", source, name, source))
	out = run("dlq", "list")
	require.Contains(t, out, ": 1\n")
	require.Contains(t, out, "p2")
	require.NotContains(t, out, "p4")

	out = run("lag", "--partitions")
	require.Regexp(t, regexp.MustCompile(`(?m)^SOURCE\s+PARTITION\s+LAG\s+DEAD LETTERS$`), out)
	lag, dead := sumLag(t, out, source)
	require.Equal(t, 1, lag, "the redriven p4 waits in the source:\n%s", out)
	require.Equal(t, 1, dead, "p2 is still dead-lettered:\n%s", out)
	var lag1 lagJSON
	require.NoError(t, json.Unmarshal([]byte(run("lag", "--output", "json")), &lag1))
	require.Equal(t, int64(1), lag1.TotalLag)
	require.Equal(t, int64(1), lag1.TotalDeadLetters)
	require.Equal(t, source, lag1.Rows[0].Source)
	require.False(t, lag1.NeverCommitted)
	out = run("lag")
	require.NotContains(t, out, "never committed")
	if strings.HasPrefix(url, "kafka://") {
		// A consumer group that started (its Source created its topics) and
		// never committed: its lag is every record, and lag says why. A
		// group that never started at all is testNoConsumer's error.
		startKafkaGroup(t, url, source, name+"-fresh")
		code, fresh, errs := cli(t, env, opts, "lag", "--source", source, "--consumer", name+"-fresh")
		require.Equal(t, 0, code, errs)
		require.Contains(t, fresh, "consumer group "+name+"-fresh has never committed an offset on "+source)
		var doc lagJSON
		code, js, errs := cli(t, env, opts, "lag", "--source", source, "--consumer", name+"-fresh", "--output", "json")
		require.Equal(t, 0, code, errs)
		require.NoError(t, json.Unmarshal([]byte(js), &doc))
		require.True(t, doc.NeverCommitted)
		require.Equal(t, int64(6), doc.TotalLag, "five seeds and the redriven p4, none committed by this group")
	}
	require.Regexp(t, regexp.MustCompile(`(?m)^SOURCE\s+LAG\s+DEAD LETTERS$`), out)
	require.Regexp(t, regexp.MustCompile(`(?m)^`+source+`\s+1\s+1$`), out, "one row per source, summed")
	require.Equal(t, 1, strings.Count(out, "\n"+source+" "), "the source once:\n%s", out)

	out = run("dlq", "redrive", "--error", "cannot decode", "--quiet")
	require.Contains(t, out, "redriven 1 of 1")
	out = run("dlq", "list")
	require.Contains(t, out, ": 0\n")
}

// testDLQJSON checks --output json of dlq list and show against the seeded
// dead letters (p2 permanent, p4 exhausted).
func testDLQJSON(t *testing.T, run func(...string) string, source, name string) {
	t.Helper()
	var list deadLettersJSON
	require.NoError(t, json.Unmarshal([]byte(run("dlq", "list", "--output", "json")), &list))
	require.Equal(t, source, list.Source)
	require.Equal(t, name, list.Consumer)
	got := map[string]deadLetterJSON{}
	for _, d := range list.DeadLetters {
		got[d.ID] = d
	}
	require.Len(t, got, 2)
	require.Equal(t, "permanent", got["p2"].Reason)
	require.Equal(t, "exhausted", got["p4"].Reason)
	require.Equal(t, 2, got["p4"].Attempts)
	require.Equal(t, "k4", got["p4"].Key)
	require.NotNil(t, got["p4"].FailedAt)
	require.Nil(t, got["p4"].Body, "list leaves bodies out")

	var show deadLettersJSON
	require.NoError(t, json.Unmarshal([]byte(run("dlq", "show", "--id", "p4", "--output", "json")), &show))
	require.Len(t, show.DeadLetters, 1)
	d := show.DeadLetters[0]
	require.Equal(t, "p4", d.ID)
	require.Equal(t, `{"n":4}`, *d.Body)
	require.Equal(t, 7, *d.BodyBytes)
	require.Equal(t, "exhausted", d.Headers["oncely-dead-letter-reason"])
}

// testNoSource: every broker command on a source that does not exist fails
// saying so, and creates nothing (lag stays an error afterwards).
func testNoSource(t *testing.T, env map[string]string, opts []adapters.Option, source, name string) {
	t.Helper()
	missing := source + "-missing"
	for _, args := range [][]string{
		{"dlq", "list"}, {"dlq", "show"}, {"dlq", "redrive"}, {"dlq", "purge", "--yes"}, {"lag"}, {"dlq", "list"},
	} {
		code, _, errs := cli(t, env, opts, append(args, "--source", missing, "--consumer", name)...)
		require.Equal(t, 1, code, "%v on a missing source: %s", args, errs)
		require.Contains(t, errs, "source does not exist", "%v", args)
		require.Contains(t, errs, missing, "%v", args)
		require.Contains(t, errs, "check --source", "%v", args)
	}
}

// testRedrivePlan: --plan tells the applied dead letters (a claim exists)
// from the others, in text and JSON, and changes nothing.
func testRedrivePlan(t *testing.T, env map[string]string, opts []adapters.Option, sel []string, name string) {
	t.Helper()
	db := pgtest.New(t)
	_, err := db.Pool.Exec(t.Context(), "INSERT INTO "+pgx.Identifier{db.Schema, "processed_messages"}.Sanitize()+
		" (consumer, message_id) VALUES ($1, 'p4'), ('someone-else', 'p2')", name)
	require.NoError(t, err)
	planArgs := append([]string{"dlq", "redrive", "--plan", "--database-url", db.URL, "--schema", db.Schema}, sel...)
	code, out, errs := cli(t, env, opts, planArgs...)
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "plan: redrive 2 of 2 dead letters")
	require.Contains(t, out, "1 already applied")
	require.Contains(t, out, "1 not applied")
	require.Regexp(t, regexp.MustCompile(`(?m)^p4\s+exhausted\s+yes\s`), out)
	require.Regexp(t, regexp.MustCompile(`(?m)^p2\s+permanent\s+no\s`), out)
	require.Contains(t, out, "nothing was changed")

	code, out, errs = cli(t, env, opts, append(planArgs, "--reason", "exhausted", "--output", "json")...)
	require.Equal(t, 0, code, errs)
	var plan redrivePlan
	require.NoError(t, json.Unmarshal([]byte(out), &plan))
	require.Equal(t, redrivePlan{Source: plan.Source, Consumer: name, Broker: plan.Broker, Seen: 2, Selected: 1,
		Applied: []string{"p4"}, NotApplied: []string{}}, plan)

	code, _, errs = cli(t, env, opts, append([]string{"dlq", "redrive", "--plan"}, sel...)...)
	require.Equal(t, 2, code)
	require.Contains(t, errs, "needs --database-url")
	code, _, errs = cli(t, env, opts, append([]string{"dlq", "redrive", "--plan", "--dry-run", "--database-url", db.URL}, sel...)...)
	require.Equal(t, 2, code)
	require.Contains(t, errs, "--plan and --dry-run")
}

// sumLag adds the LAG and DEAD LETTERS columns of the lag table's rows.
func sumLag(t *testing.T, out, source string) (lag, dead int) {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) != 4 || f[0] != source {
			continue
		}
		var l, d int
		if f[2] != "-" {
			_, err := fmt.Sscan(f[2], &l)
			require.NoError(t, err)
		}
		if f[3] != "-" {
			_, err := fmt.Sscan(f[3], &d)
			require.NoError(t, err)
		}
		lag += l
		dead += d
	}
	return lag, dead
}

func TestMigrate(t *testing.T) {
	dbURL := envtest.Postgres(t)
	schema := fmt.Sprintf("cli_migrate_%d", rand.Uint32())
	pool, err := pgxpool.New(context.Background(), dbURL)
	require.NoError(t, err)
	t.Cleanup(func() {
		_, _ = pool.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
		pool.Close()
	})
	code, out, errs := cli(t, map[string]string{"DATABASE_URL": dbURL}, nil, "migrate", "--schema", schema)
	require.Equal(t, 0, code, errs)
	require.Regexp(t, `^schema `+schema+` migrated from version 0 to [1-9]\d*\n$`, out)
	var exists bool
	require.NoError(t, pool.QueryRow(context.Background(), "SELECT to_regclass($1) IS NOT NULL", schema+".processed_messages").Scan(&exists))
	require.True(t, exists)
	code, out, errs = cli(t, nil, nil, "migrate", "--database-url", dbURL, "--schema", schema)
	require.Equal(t, 0, code, errs)
	require.Regexp(t, `^schema `+schema+` is up to date \(version [1-9]\d*\)\n$`, out)
}

// TestPrune: `oncely prune` deletes the claims older than --retention and
// keeps the others.
func TestPrune(t *testing.T) {
	dbURL := envtest.Postgres(t)
	schema := fmt.Sprintf("cli_prune_%d", rand.Uint32())
	pool, err := pgxpool.New(context.Background(), dbURL)
	require.NoError(t, err)
	t.Cleanup(func() {
		_, _ = pool.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
		pool.Close()
	})
	code, _, errs := cli(t, nil, nil, "migrate", "--database-url", dbURL, "--schema", schema)
	require.Equal(t, 0, code, errs)
	claims := pgx.Identifier{schema, "processed_messages"}.Sanitize()
	_, err = pool.Exec(context.Background(), "INSERT INTO "+claims+" (consumer, message_id, processed_at) VALUES "+
		"('ledger', 'old-1', now() - interval '3 hours'), ('ledger', 'old-2', now() - interval '2 hours'), ('ledger', 'new', now())")
	require.NoError(t, err)
	code, out, errs := cli(t, map[string]string{"DATABASE_URL": dbURL}, nil, "prune", "--schema", schema, "--retention", "1h")
	require.Equal(t, 0, code, errs)
	require.Equal(t, "deleted 2 claims older than 1h0m0s from schema "+schema+"\n", out)
	var left []string
	rows, err := pool.Query(context.Background(), "SELECT message_id FROM "+claims)
	require.NoError(t, err)
	for rows.Next() {
		var id string
		require.NoError(t, rows.Scan(&id))
		left = append(left, id)
	}
	require.NoError(t, rows.Err())
	require.Equal(t, []string{"new"}, left)
	code, _, errs = cli(t, nil, nil, "prune", "--database-url", dbURL, "--retention", "-1s")
	require.Equal(t, 2, code)
	require.Contains(t, errs, "--retention must be positive")
}

func TestDevKafka(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())

	var out, errb envtest.Buffer
	a := newApp(&out, &errb, func(string) string { return "" })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int)
	go func() { done <- a.run(ctx, []string{"dev", "kafka", "--ports", fmt.Sprint(port)}) }()
	url := fmt.Sprintf("kafka://127.0.0.1:%d", port)
	require.Eventually(t, func() bool { return strings.Contains(out.String(), "BROKER_URL="+url) }, 20*time.Second, 20*time.Millisecond)

	// The dev cluster is a usable broker.
	b, err := adapters.Open(context.Background(), url)
	require.NoError(t, err)
	require.NoError(t, b.Publish(context.Background(), "t", &consumer.Message{ID: "1", Body: []byte("x")}))
	_, err = b.Backlog(context.Background(), "t", "g")
	require.ErrorIs(t, err, adapters.ErrNoConsumer, "no Source of g ever started")
	src, err := b.Source(context.Background(), "t", "g")
	require.NoError(t, err)
	require.NoError(t, src.Close(context.Background()))
	var lines []consumer.Backlog
	require.Eventually(t, func() bool { // the dead-letter topic the Source created reaches every broker's metadata
		lines, err = b.Backlog(context.Background(), "t", "g")
		return err == nil
	}, 10*time.Second, 20*time.Millisecond, "Backlog of g after its Source started: %v", err)
	var lag int64
	for _, l := range lines {
		lag += max(l.Lag, 0)
	}
	require.Equal(t, int64(1), lag)
	require.NoError(t, b.Close())

	cancel()
	require.Equal(t, 0, <-done, errb.String())
}

// TestPublish: `oncely publish` sends one message with its ID, key, headers
// and body from --body, --file or standard input, and refuses what a
// consumer could not handle (no ID) before connecting.
func TestPublish(t *testing.T) {
	mb := memory.NewBroker()
	opts := []adapters.Option{adapters.WithMemoryBroker(mb)}
	env := map[string]string{"BROKER_URL": "mem://"}
	file := filepath.Join(t.TempDir(), "body.json")
	require.NoError(t, os.WriteFile(file, []byte(`{"from":"file"}`), 0o600))

	code, out, errs := cli(t, env, opts, "publish", "--source", "payments", "--id", "p1", "--key", "acct-1", "--header", "app=cli", "--header", "x=a=b", "--body", `{"n":1}`)
	require.Equal(t, 0, code, errs)
	require.Equal(t, "published p1 to payments (7 bytes)\n", out)
	code, _, errs = cli(t, env, opts, "publish", "--source", "payments", "--id", "p2", "--file", file)
	require.Equal(t, 0, code, errs)
	var stdout, stderr bytes.Buffer
	a := newApp(&stdout, &stderr, func(k string) string { return env[k] })
	a.openOpts, a.stdin = opts, strings.NewReader("from stdin")
	a.memoryShared = true
	require.Equal(t, 0, a.run(context.Background(), []string{"publish", "--source", "payments", "--id", "p3"}), stderr.String())

	ds := receiveAll(t, mb.NewSource("payments", "check"), 3)
	require.Equal(t, "p1", ds[0].ID)
	require.Equal(t, "acct-1", ds[0].Key)
	require.Equal(t, `{"n":1}`, string(ds[0].Body))
	require.Equal(t, "cli", ds[0].Header("app"))
	require.Equal(t, "a=b", ds[0].Header("x"))
	require.Equal(t, `{"from":"file"}`, string(ds[1].Body))
	require.Equal(t, "from stdin", string(ds[2].Body))

	code, _, errs = cli(t, env, opts, "publish", "--source", "payments", "--body", "x")
	require.Equal(t, 2, code)
	require.Contains(t, errs, "--id")
	code, _, errs = cli(t, env, opts, "publish", "--source", "payments", "--id", "p4", "--body", "x", "--file", file)
	require.Equal(t, 2, code)
	require.Contains(t, errs, "not both")
	code, _, errs = cli(t, env, opts, "publish", "--source", "payments", "--id", "p4", "--header", "novalue")
	require.Equal(t, 2, code)
	require.Contains(t, errs, "want NAME=VALUE")
	require.Equal(t, 3, mb.Depth("payments"), "the refused commands published nothing")
}

// TestDLQShowEmptyID: an explicit empty --id is a mistake, not "everything".
func TestDLQShowEmptyID(t *testing.T) {
	code, _, errs := cli(t, map[string]string{"BROKER_URL": "mem://"}, nil, "dlq", "show", "--source", "s", "--consumer", "c", "--id", "")
	require.Equal(t, 2, code)
	require.Contains(t, errs, "--id is empty")
}

// receiveAll receives n messages from src, in order, and closes it.
func receiveAll(t *testing.T, src consumer.Source, n int) []*consumer.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var msgs []*consumer.Message
	for len(msgs) < n {
		ds, err := src.Receive(ctx, n-len(msgs))
		require.NoError(t, err)
		for _, d := range ds {
			msgs = append(msgs, d.Message())
		}
	}
	require.NoError(t, src.Close(ctx))
	return msgs
}
