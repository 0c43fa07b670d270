package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/envtest"
	"github.com/oncely/oncely/retry"
)

// childEnv, set in a child's environment, makes the test binary a ledger
// instance (see runChild) instead of running the tests.
const childEnv = "ONCELY_LEDGER_CHILD"

// runChild is a ledger instance started by startInstances: it says "ready"
// on stdout, waits at the gate (its stdin, a pipe shared by every instance,
// reaches EOF when the test closes it) and runs the ledger with its
// arguments.
func runChild() int {
	fmt.Println("ready")
	_, _ = io.Copy(io.Discard, os.Stdin)
	return run(os.Args[1:], os.Getenv, os.Stderr)
}

// instances is the number of ledger processes started at the same moment.
const instances = 5

// instance is one ledger child process.
type instance struct {
	cmd  *exec.Cmd
	logs *envtest.Buffer
	done chan error
}

// startInstances starts instances ledger processes on brokerURL and dbURL
// (each with its own application_name) with args, holds them at the gate
// until all are up, then releases them at once.
func startInstances(t *testing.T, brokerURL, dbURL string, args ...string) []*instance {
	gate, release, err := os.Pipe()
	require.NoError(t, err)
	defer gate.Close()
	ready := make(chan error, instances)
	var out []*instance
	for i := range instances {
		cmd := exec.Command(os.Args[0], args...)
		cmd.Env = append(os.Environ(), childEnv+"=1", "BROKER_URL="+brokerURL, fmt.Sprintf("DATABASE_URL=%s&application_name=ledger-%d", dbURL, i))
		cmd.Stdin = gate
		stdout, err := cmd.StdoutPipe()
		require.NoError(t, err)
		in := &instance{cmd: cmd, logs: &envtest.Buffer{}, done: make(chan error, 1)}
		cmd.Stderr = in.logs
		require.NoError(t, cmd.Start())
		go func() {
			line, err := bufio.NewReader(stdout).ReadString('\n')
			if err == nil && line != "ready\n" {
				err = fmt.Errorf("instance %d said %q", i, line)
			}
			ready <- err
			_, _ = io.Copy(io.Discard, stdout)
			in.done <- cmd.Wait()
		}()
		out = append(out, in)
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			<-in.done
		})
	}
	for range instances {
		select {
		case err := <-ready:
			require.NoError(t, err)
		case <-time.After(30 * time.Second):
			t.Fatal("the instances did not reach the gate within 30s")
		}
	}
	require.NoError(t, release.Close(), "opening the gate")
	return out
}

// brokerCase is one real broker of TestInstancesStartTogether.
type brokerCase struct {
	name string
	// url returns the broker URL for this run.
	url func(t *testing.T) string
	// topology checks that source's destinations and the events
	// destination (unless "") are what one instance creates, and removes
	// them at the end of the test.
	// tiers are the retry tiers the consumer's policy reaches (ledgerTiers,
	// defaultPolicyTiers): the Kafka and RabbitMQ cases want exactly those.
	topology func(t *testing.T, url, source, consumerName, events string, tiers retry.Tiers)
}

// TestInstancesStartTogether: five ledger processes started at the same
// moment (a Deployment's replicas) against a fresh database schema and fresh
// broker destinations all start, all consume, and leave the tables, the
// store's migrations and the broker topology one instance would create.
// Catches: CREATE TABLE IF NOT EXISTS or the migrations racing themselves
// (duplicate key in pg_type), a topic creation failing on
// TopicAlreadyExists, a queue declared by two processes at once failing, and
// an instance that starts but never gets messages. Each instance also runs
// its outbox relay: five relays at once publish every payment's event once,
// in per-account order (see eventsCheck).
func TestInstancesStartTogether(t *testing.T) {
	for _, bc := range brokerCases() {
		t.Run(bc.name, func(t *testing.T) {
			ctx := context.Background()
			dbURL := envtest.Postgres(t)
			pool, err := pgxpool.New(ctx, dbURL)
			require.NoError(t, err)
			defer pool.Close()
			suffix := fmt.Sprintf("%08x", rand.Uint32())
			schema, store := "ledger_start_"+suffix, "oncely_start_"+suffix
			_, err = pool.Exec(ctx, "CREATE SCHEMA "+schema)
			require.NoError(t, err)
			t.Cleanup(func() {
				_, _ = pool.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+schema+" CASCADE")
				_, _ = pool.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+store+" CASCADE")
			})
			// A consumer name of its own: on Kafka it is the group, and members
			// of other tests' "ledger" group on the shared broker would take
			// partitions in its rebalances.
			source, name := "payments-start-"+suffix, "ledger-start-"+suffix
			events := source + "-applied"
			brokerURL := bc.url(t)
			bc.topology(t, brokerURL, source, name, events, ledgerTiers) // registers the cleanup; checks after the instances ran

			ins := startInstances(t, brokerURL, dbURL+"&search_path="+schema, "-source", source, "-consumer", name, "-schema", store, "-concurrency", "2", "-handler-delay", "20ms",
				"-events", events)
			for i, in := range ins {
				waitLog(t, in, i, `"msg":"ledger started"`)
			}
			// Which instance applied a payment: its connection's application_name.
			_, err = pool.Exec(ctx, "ALTER TABLE "+schema+".ledger_entries ADD COLUMN instance text DEFAULT current_setting('application_name')")
			require.NoError(t, err)

			b, err := adapters.Open(ctx, brokerURL)
			require.NoError(t, err)
			defer b.Close()
			published := 0
			deadline := time.Now().Add(90 * time.Second)
			for {
				msgs := make([]*consumer.Message, 40)
				for i := range msgs {
					id := fmt.Sprintf("p%04d", published+i)
					msgs[i] = pay(id, "acc-"+id, 1)
				}
				require.NoError(t, b.Publish(ctx, source, msgs...))
				published += len(msgs)
				require.Eventually(t, func() bool { return countEntries(t, pool, schema) >= published }, 60*time.Second, 50*time.Millisecond,
					"%d payments applied of %d", countEntries(t, pool, schema), published)
				if n := len(instancesSeen(t, pool, schema)); n == instances || time.Now().After(deadline) {
					break
				}
			}
			if seen := instancesSeen(t, pool, schema); len(seen) != instances {
				for i, in := range ins {
					t.Logf("instance %d:\n%s", i, in.logs)
				}
				t.Fatalf("instances that applied payments: %v, want all %d", seen, instances)
			}
			var entries, distinct int
			require.NoError(t, pool.QueryRow(ctx, "SELECT count(*), count(DISTINCT message_id) FROM "+schema+".ledger_entries").Scan(&entries, &distinct))
			require.Equal(t, published, entries, "each payment applied once")
			require.Equal(t, published, distinct)
			ec := eventsCheck{pool: pool, schema: schema, outboxSchema: store, destination: events, consumerName: name}
			ec.checkOutbox(t, ec.want(t), true)

			for i, in := range ins {
				require.NoError(t, in.cmd.Process.Signal(syscall.SIGTERM))
				select {
				case err := <-in.done:
					require.NoError(t, err, "instance %d:\n%s", i, in.logs)
				case <-time.After(60 * time.Second):
					t.Fatalf("instance %d did not stop within 60s:\n%s", i, in.logs)
				}
				require.Contains(t, in.logs.String(), `"msg":"ledger stopped cleanly"`)
				in.done <- nil // for the cleanup
			}
			var version int
			require.NoError(t, pool.QueryRow(ctx, "SELECT max(version) FROM "+store+".schema_migrations").Scan(&version))
			require.Positive(t, version)
		})
	}
}

// waitLog waits until instance i logged want, failing when it exits first.
func waitLog(t *testing.T, in *instance, i int, want string) {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for !strings.Contains(in.logs.String(), want) {
		select {
		case err := <-in.done:
			in.done <- err
			t.Fatalf("instance %d exited (%v) before logging %s:\n%s", i, err, want, in.logs)
		case <-deadline:
			t.Fatalf("instance %d did not log %s within 60s:\n%s", i, want, in.logs)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func countEntries(t *testing.T, pool *pgxpool.Pool, schema string) int {
	var n int
	require.NoError(t, pool.QueryRow(context.Background(), "SELECT count(*) FROM "+schema+".ledger_entries").Scan(&n))
	return n
}

func instancesSeen(t *testing.T, pool *pgxpool.Pool, schema string) []string {
	rows, err := pool.Query(context.Background(), "SELECT DISTINCT instance FROM "+schema+".ledger_entries WHERE instance LIKE 'ledger-%' ORDER BY 1")
	require.NoError(t, err)
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return out
}
