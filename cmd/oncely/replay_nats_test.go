package main

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/adapters/nats"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/envtest"
	"github.com/oncely/oncely/internal/pgtest"
	"github.com/oncely/oncely/internal/replayplan"
)

// TestReplayNATS: a JetStream durable consumer is rewound by sequence
// (recreated there), refused while a Source pulls, its covered claims
// deleted with --reprocess and nothing else; a time before the retention
// starts at the oldest message kept.
func TestReplayNATS(t *testing.T) {
	url := envtest.NATS(t)
	source := fmt.Sprintf("replay.%d", time.Now().UnixNano())
	name := "ledger"
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
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
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

	db := pgtest.New(t)
	claims := replayplan.ClaimsTable(db.Schema)
	for _, id := range append(slices.Clone(all), "outside") {
		_, err := db.Pool.Exec(t.Context(), "INSERT INTO "+claims+" (consumer, message_id) VALUES ($1, $2)", name, id)
		require.NoError(t, err)
	}
	base := []string{"replay", "--broker", url, "--source", source, "--consumer", name}
	withDB := append(slices.Clone(base), "--database-url", db.URL, "--schema", db.Schema)

	code, out, errs := cli(t, nil, nil, append(slices.Clone(withDB), "--to", "earliest", "--plan", "--output", "json")...)
	require.Equal(t, 0, code, errs)
	plan := replayJSONOf(t, out)
	require.EqualValues(t, 10, plan.Covered)
	require.EqualValues(t, 10, *plan.ClaimedTotal)
	require.EqualValues(t, 11, plan.Partitions[0].Committed)

	refuseLiveNATS(t, b, source, name, append(slices.Clone(base), "--to", "earliest"))

	reprocess := append(slices.Clone(withDB), "--to", "0:6", "--reprocess", "--yes", "--output", "json")
	code, out, errs = cli(t, nil, nil, reprocess...)
	require.Equal(t, 0, code, errs)
	require.EqualValues(t, 5, *replayJSONOf(t, out).ClaimsDeleted)
	require.Equal(t, append(slices.Clone(all[:5]), "outside"), claimedIDs(t, db, claims, name))

	code, out, errs = cli(t, nil, nil, reprocess...)
	require.Equal(t, 0, code, errs)
	again := replayJSONOf(t, out)
	require.EqualValues(t, 0, again.Covered, "a second run changes nothing")
	require.EqualValues(t, 6, again.Partitions[0].Target)

	require.Equal(t, all[5:], consumeAck(t, url, source, name, 5), "the consumer reads exactly the rewound messages again")

	// Messages 1-2 removed, as retention would.
	s, err := js.Stream(ctx, nats.StreamName(source))
	require.NoError(t, err)
	require.NoError(t, s.Purge(ctx, jetstream.WithPurgeSequence(3)))
	code, out, errs = cli(t, nil, nil, append(slices.Clone(base), "--to", time.Now().Add(-48*time.Hour).UTC().Format(time.RFC3339), "--plan")...)
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "starts at the earliest available, offset 3")
}

// refuseLiveNATS opens a Source of name and checks that replay args is
// refused while it pulls.
func refuseLiveNATS(t *testing.T, b adapters.Broker, source, name string, args []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	src, err := b.Source(ctx, source, name)
	require.NoError(t, err)
	defer func() { require.NoError(t, src.Close(ctx)) }()
	r, _ := adapters.AsReplayer(b)
	for { // the pull requests reach the server in the background
		plan, err := r.PlanReplay(ctx, source, name, adapters.ReplayTarget{})
		require.NoError(t, err)
		if len(plan.Members) > 0 {
			break
		}
		require.NoError(t, ctx.Err(), "no pull request arrived")
		time.Sleep(50 * time.Millisecond)
	}
	code, _, errs := cli(t, nil, nil, args...)
	require.Equal(t, 1, code)
	require.Contains(t, errs, "pull requests waiting")
}
