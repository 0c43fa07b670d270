package redis

import (
	"testing"
	"time"

	"github.com/oncely/oncely/adapters/adaptertest"
	"github.com/oncely/oncely/consumer"
)

// TestCopyFaultInsideScript: the retry or dead-letter copy fails inside
// the settlement script, after the script's earlier commands ran (its
// destination is a plain string, so ZADD or XADD answers WRONGTYPE; Redis
// does not undo what a script already did). The original is neither acked
// nor deleted: it stays pending, comes back on the next Source once the
// first closed, and once the fault is removed its settlement stores
// exactly one copy and acks it.
func TestCopyFaultInsideScript(t *testing.T) {
	for _, op := range []adaptertest.CopyOp{adaptertest.CopyRetry, adaptertest.CopyDeadLetter} {
		t.Run(string(op), func(t *testing.T) {
			client := newClient(t)
			stream := adaptertest.SourceName("scriptfault")
			cfg := Config{Stream: stream, Consumer: "ledger", Lease: 5 * time.Second}
			dest := DeadLetterStream(stream, "ledger")
			if op == adaptertest.CopyRetry {
				dest = DelayedKey(stream, "ledger")
			}
			settle := func(d consumer.Delivery) error {
				h := map[string]string{consumer.HeaderAttempt: "2", consumer.HeaderError: "fails"}
				if op == adaptertest.CopyRetry {
					return d.Retry(t.Context(), time.Millisecond, h)
				}
				return d.DeadLetter(t.Context(), h)
			}
			publish(t, client, stream, testMessages("fault", 1)...)
			first := newSource(t, client, cfg)
			d := adaptertest.ReceiveN(t, first, 1, 10*time.Second)[0]

			if err := client.Set(t.Context(), dest, "not a "+string(op)+" destination", 0).Err(); err != nil {
				t.Fatal(err)
			}
			if err := settle(d); err == nil {
				t.Fatalf("%s returned nil although its copy failed inside the script", op)
			}
			if n := pendingCount(t, client, stream, "ledger"); n != 1 {
				t.Fatalf("%d entries pending after the failed %s, want the original still pending (1): the script acked it before its copy failed", n, op)
			}
			if n := client.XLen(t.Context(), stream).Val(); n != 1 {
				t.Fatalf("the source stream holds %d entries after the failed %s, want 1", n, op)
			}

			if err := client.Del(t.Context(), dest).Err(); err != nil {
				t.Fatal(err)
			}
			if err := first.Close(t.Context()); err != nil {
				t.Fatal(err)
			}
			second := newSource(t, client, cfg)
			back := adaptertest.ReceiveN(t, second, 1, 10*time.Second)[0]
			if m := back.Message(); m.ID != "fault-00" || m.Attempt != 1 || m.Header(consumer.HeaderError) != "" {
				t.Fatalf("got %s attempt %d error header %q, want the original fault-00 at attempt 1", m.ID, m.Attempt, m.Header(consumer.HeaderError))
			}
			if err := settle(back); err != nil {
				t.Fatalf("%s once the fault was removed: %v", op, err)
			}
			if op == adaptertest.CopyRetry {
				again := adaptertest.ReceiveN(t, second, 1, 10*time.Second)[0]
				if m := again.Message(); m.ID != "fault-00" || m.Attempt != 2 {
					t.Errorf("retry copy %s attempt %d, want fault-00 attempt 2", m.ID, m.Attempt)
				}
				ackAll(t, []consumer.Delivery{again})
				waitPending(t, client, RetryStream(stream, "ledger"), "ledger", 0)
			} else if dl := readStream(t, client, dest); len(dl) != 1 || dl[0].ID != "fault-00" {
				t.Errorf("dead letters %v, want exactly one copy of fault-00", dl)
			}
			waitPending(t, client, stream, "ledger", 0)
			adaptertest.AssertQuiet(t, second, 200*time.Millisecond)
		})
	}
}
