//go:build faults

package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/adapters/nats"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/envtest"
)

// TestFaultReplayCrashNATS kills oncely replay of a JetStream durable
// consumer at each step of its recreation (marker created, durable
// deleted, durable created) and at 12 moments spread over a run: the
// durable is at its old or its new start, or missing with the replay
// marker holding the new start; a Source started with start=latest after a
// kill between the delete and the create reads exactly the rewound
// messages (it creates the durable at the marker's start), and running the
// replay again completes it.
func TestFaultReplayCrashNATS(t *testing.T) {
	url := envtest.NATS(t)
	source := fmt.Sprintf("replay.crash.%d", time.Now().UnixNano())
	const name = "ledger"
	nc, err := natsgo.Connect(url)
	require.NoError(t, err)
	defer nc.Close()
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	t.Cleanup(func() {
		for _, s := range []string{source, nats.RetrySubject(source, name), nats.DeadLetterSubject(source, name)} {
			_ = js.DeleteStream(context.Background(), nats.StreamName(s))
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	b, err := adapters.Open(ctx, url)
	require.NoError(t, err)
	defer b.Close()
	var all []string
	var msgs []*consumer.Message
	for i := range 10 {
		id := fmt.Sprintf("n-%02d", i+1) // stream sequence i+1
		all = append(all, id)
		msgs = append(msgs, &consumer.Message{ID: id, Body: []byte(id)})
	}
	require.NoError(t, b.Publish(ctx, source, msgs...))
	require.Equal(t, all, consumeAck(t, url, source, name, 10))
	stream, err := js.Stream(ctx, nats.StreamName(source))
	require.NoError(t, err)

	// old: the durable delivered all 10; new: it starts at sequence 6 with
	// nothing delivered since; marker: the durable is missing and the marker
	// starts at 6.
	state := func() string {
		c, err := stream.Consumer(ctx, name)
		if err == nil {
			ci := c.CachedInfo()
			switch {
			case ci.Delivered.Stream == 10:
				return "old"
			case ci.Config.OptStartSeq == 6 && ci.Delivered.Stream < 6: // the server counts 5 delivered
				return "new"
			}
			return fmt.Sprintf("delivered %d, start %d", ci.Delivered.Stream, ci.Config.OptStartSeq)
		}
		require.ErrorIs(t, err, jetstream.ErrConsumerNotFound)
		m, err := stream.Consumer(ctx, nats.ReplayMarker(name))
		if err != nil {
			return "durable and marker missing"
		}
		if m.CachedInfo().Config.OptStartSeq == 6 {
			return "marker"
		}
		return fmt.Sprintf("marker at %d", m.CachedInfo().Config.OptStartSeq)
	}
	markerGone := func() {
		t.Helper()
		_, err := stream.Consumer(ctx, nats.ReplayMarker(name))
		require.ErrorIs(t, err, jetstream.ErrConsumerNotFound)
	}
	args := []string{"replay", "--broker", url, "--source", source, "--consumer", name, "--to", "0:6"}
	for _, tc := range []struct{ fp, want string }{
		{"nats-replay-marker-created", "old"},
		{"nats-replay-deleted", "marker"},
		{"nats-replay-created", "new"},
	} {
		killed, _ := cliProcess(t, tc.fp, 0, args...)
		require.True(t, killed, tc.fp)
		require.Equal(t, tc.want, state(), "after a kill at %s", tc.fp)
		_, _ = cliProcess(t, "", 0, args...)
		require.Equal(t, "new", state(), "the replay run again after a kill at %s", tc.fp)
		markerGone()
		require.Equal(t, all[5:], consumeAck(t, url, source, name, 5))
	}

	// A Source, even one told to start at the latest message, completes a
	// replay killed between the delete and the create.
	killed, _ := cliProcess(t, "nats-replay-deleted", 0, args...)
	require.True(t, killed)
	require.Equal(t, "marker", state())
	require.Equal(t, all[5:], consumeAck(t, url+"?start=latest", source, name, 5), "the rewound messages, none skipped")
	markerGone()

	began := time.Now()
	_, _ = cliProcess(t, "", 0, args...)
	full := time.Since(began)
	require.Equal(t, all[5:], consumeAck(t, url, source, name, 5))
	seen := map[string]int{}
	for i := range 12 {
		after := full * time.Duration(i+1) / 12
		killed, _ := cliProcess(t, "", after, args...)
		got := state()
		require.Contains(t, []string{"old", "marker", "new"}, got, "after a kill after %s", after)
		if killed {
			seen[got]++
		}
		_, _ = cliProcess(t, "", 0, args...)
		require.Equal(t, "new", state())
		markerGone()
		require.Equal(t, all[5:], consumeAck(t, url, source, name, 5))
	}
	t.Logf("a full run took %s; timed kills leaving the old start: %d, the marker: %d, the new start: %d", full, seen["old"], seen["marker"], seen["new"])
}
