//go:build faults

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/oncely/oncely/adapters/redis"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/envtest"
	"github.com/oncely/oncely/internal/failpoint"
	"github.com/oncely/oncely/internal/kafkatest"
)

// TestFaultReplayCrashKafka kills oncely replay of a group over 8
// partitions before and after its commit and at 12 moments spread over a
// run: every kill leaves all partitions at their old offsets or all at
// their new ones (one OffsetCommit), and running the replay again
// completes it.
func TestFaultReplayCrashKafka(t *testing.T) {
	addrs := kafkatest.Brokers(t)
	topic := fmt.Sprintf("replay-crash-%d", time.Now().UnixNano())
	const group, partitions, per = "ledger", 8, 10
	kafkatest.CreateTopic(t, addrs, topic, partitions)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	old := kadm.Offsets{}
	for p := range int32(partitions) {
		for i := range per {
			id := fmt.Sprintf("k-%d-%d", p, i)
			require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: p, Value: []byte(id),
				Headers: []kgo.RecordHeader{{Key: consumer.HeaderMessageID, Value: []byte(id)}}}).FirstErr())
		}
		old.Add(kadm.Offset{Topic: topic, Partition: p, At: per, LeaderEpoch: -1})
	}
	adm := kadm.NewClient(cl)
	reset := func() { require.NoError(t, adm.CommitAllOffsets(ctx, group, old)) }
	state := func() string {
		fetched, err := adm.FetchOffsets(ctx, group)
		require.NoError(t, err)
		at := map[int64]int{}
		for p := range int32(partitions) {
			o, _ := fetched.Lookup(topic, p)
			at[o.At]++
		}
		switch {
		case at[per] == partitions:
			return "old"
		case at[0] == partitions:
			return "new"
		}
		return fmt.Sprintf("mixed: %d partitions old, %d new, %d elsewhere", at[per], at[0], partitions-at[per]-at[0])
	}
	seen := crashRounds(t, []string{"replay-planned", "replay-committed"}, 12, reset, state,
		"replay", "--broker", "kafka://"+strings.Join(addrs, ","), "--source", topic, "--consumer", group, "--to", "earliest")
	require.Positive(t, seen["old"])
	require.Positive(t, seen["new"])
}

// TestFaultReplayCrashRedis kills oncely replay of a Redis group before
// and after its XGROUP SETID and at 12 moments spread over a run: every
// kill leaves the group at its old or its new last-delivered ID, and
// running the replay again completes it.
func TestFaultReplayCrashRedis(t *testing.T) {
	url := envtest.Redis(t)
	source := fmt.Sprintf("replay-crash-%d", time.Now().UnixNano())
	const group = "ledger"
	opts, err := goredis.ParseURL(url)
	require.NoError(t, err)
	client := goredis.NewClient(opts)
	defer client.Close()
	t.Cleanup(func() { _ = client.Del(context.Background(), source).Err() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for i := range 10 {
		id := fmt.Sprintf("r-%02d", i+1)
		require.NoError(t, client.XAdd(ctx, &goredis.XAddArgs{Stream: source, ID: fmt.Sprintf("%d-1", (i+1)*1000), Values: redis.EntryFields(&consumer.Message{ID: id})}).Err())
	}
	require.NoError(t, client.XGroupCreate(ctx, source, group, "10000-1").Err())
	reset := func() { require.NoError(t, client.XGroupSetID(ctx, source, group, "10000-1").Err()) }
	state := func() string {
		groups, err := client.XInfoGroups(ctx, source).Result()
		require.NoError(t, err)
		require.Len(t, groups, 1)
		switch id := groups[0].LastDeliveredID; id {
		case "10000-1":
			return "old"
		case "6000-0":
			return "new"
		default:
			return "elsewhere: " + id
		}
	}
	seen := crashRounds(t, []string{"replay-planned", "replay-committed"}, 12, reset, state,
		"replay", "--broker", url, "--source", source, "--consumer", group, "--to", "0:6000-1")
	require.Positive(t, seen["old"])
	require.Positive(t, seen["new"])
}

// cliProcess runs the oncely command args as a process of its own (this
// test binary, asCLIEnv) with the failpoint fp armed, killing it with
// SIGKILL after killAfter when that is not 0. It returns whether the
// process died of SIGKILL and its output; a process that exits non-zero
// fails the test.
func cliProcess(t *testing.T, fp string, killAfter time.Duration, args ...string) (killed bool, out string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Env = append(os.Environ(), asCLIEnv+"=1", failpoint.Env+"="+fp)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Start())
	if killAfter > 0 {
		timer := time.AfterFunc(killAfter, func() { _ = cmd.Process.Kill() })
		defer timer.Stop()
	}
	err := cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
		return true, stdout.String()
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) || err != nil {
		t.Fatalf("oncely %v: %v\nstdout: %s\nstderr: %s", args, err, stdout.String(), stderr.String())
	}
	return false, stdout.String()
}

// crashRounds kills the replay args at every failpoint of fps (each must
// kill it) and then at timed points spread over a full run's duration,
// resetting the consumer to its old position before each round with reset.
// After each kill, state must say "old" or "new" (anything else fails the
// test) and running the same replay again must leave it "new". It returns
// how many kills left each state.
func crashRounds(t *testing.T, fps []string, timed int, reset func(), state func() string, args ...string) map[string]int {
	t.Helper()
	seen := map[string]int{}
	check := func(what string, killed bool) {
		t.Helper()
		got := state()
		require.Contains(t, []string{"old", "new"}, got, "after a kill %s", what)
		if killed {
			seen[got]++
		}
		_, _ = cliProcess(t, "", 0, args...)
		require.Equal(t, "new", state(), "the replay run again after a kill %s", what)
	}
	for _, fp := range fps {
		reset()
		killed, _ := cliProcess(t, fp, 0, args...)
		require.True(t, killed, "the failpoint %s was not reached", fp)
		check("at "+fp, true)
	}
	reset()
	began := time.Now()
	_, _ = cliProcess(t, "", 0, args...)
	full := time.Since(began)
	require.Equal(t, "new", state())
	for i := range timed {
		reset()
		after := full * time.Duration(i+1) / time.Duration(timed)
		killed, _ := cliProcess(t, "", after, args...)
		check("after "+after.String(), killed)
	}
	t.Logf("a full run took %s; kills leaving the old position: %d, the new: %d", full, seen["old"], seen["new"])
	return seen
}
