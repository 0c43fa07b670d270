package adapters_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/adapters/adaptertest"
	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/internal/envtest"
)

// runPurge: Broker.Purge deletes exactly the dead letters its filters
// select — every copy of each selected ID — and nothing on a dry run; what
// it leaves is still listed with its failure. Catches a purge that deletes
// on a dry run, ignores a filter or the limit, or leaves a duplicate copy.
func runPurge(t *testing.T, url string) {
	b, err := adapters.Open(t.Context(), url)
	require.NoError(t, err)
	defer func() { require.NoError(t, b.Close()) }()
	h := brokerHarness{b}
	name := adaptertest.SourceName("purge")

	// p1 twice (two copies of one ID), p2..p4 once; odd IDs fail "odd".
	failures := map[string]string{"p1": "odd failure", "p2": "even failure", "p3": "odd failure", "p4": "even failure"}
	msgs := []*consumer.Message{{ID: "p1", Body: []byte("1")}, {ID: "p1", Body: []byte("1")}, {ID: "p2", Body: []byte("2")}, {ID: "p3", Body: []byte("3")}, {ID: "p4", Body: []byte("4")}}
	h.Publish(t, name, msgs...)
	src := h.NewSource(t, name, adaptertest.ConsumerName)
	ctx, cancel := context.WithTimeout(t.Context(), adaptertest.WaitTimeout)
	defer cancel()
	for _, d := range adaptertest.ReceiveN(t, src, len(msgs), adaptertest.WaitTimeout) {
		m := d.Message()
		headers := consumer.FailureHeaders(m, consumer.Failure{
			Consumer: adaptertest.ConsumerName, Err: errors.New(failures[m.ID]), Reason: consumer.ReasonPermanent, NextAttempt: m.Attempt,
		})
		require.NoError(t, d.DeadLetter(ctx, headers))
	}
	require.NoError(t, src.Close(ctx))
	require.Len(t, h.DeadLetters(t, name, adaptertest.ConsumerName, len(msgs), adaptertest.WaitTimeout), len(msgs))

	purge := func(opts adapters.PurgeOptions) adapters.PurgeResult {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), adaptertest.WaitTimeout)
		defer cancel()
		res, err := b.Purge(ctx, name, adaptertest.ConsumerName, opts)
		require.NoError(t, err)
		return res
	}
	left := func(n int) []string {
		t.Helper()
		var ids []string
		for _, m := range h.DeadLetters(t, name, adaptertest.ConsumerName, n, adaptertest.QuietWindow) {
			ids = append(ids, m.ID)
		}
		slices.Sort(ids)
		return ids
	}

	res := purge(adapters.PurgeOptions{ErrorContains: "odd", DryRun: true})
	require.Equal(t, adapters.PurgeResult{Seen: 5, Purged: 2, Skipped: 2, DuplicateCopies: 1}, res, "dry run")
	require.Equal(t, []string{"p1", "p1", "p2", "p3", "p4"}, left(5), "a dry run deletes nothing")

	res = purge(adapters.PurgeOptions{ErrorContains: "odd"})
	require.Equal(t, 2, res.Purged)
	require.Equal(t, 1, res.DuplicateCopies, "the second copy of p1 goes with it")
	require.Equal(t, []string{"p2", "p4"}, left(2))

	res = purge(adapters.PurgeOptions{ID: "p4"})
	require.Equal(t, 1, res.Purged)
	dl, err := b.DeadLetters(t.Context(), name, adaptertest.ConsumerName, 0)
	require.NoError(t, err)
	require.Len(t, dl, 1)
	require.Equal(t, "p2", dl[0].Message.ID)
	require.Equal(t, "even failure", dl[0].Error(), "what is left keeps its failure")

	res = purge(adapters.PurgeOptions{Reason: consumer.ReasonExhausted})
	require.Equal(t, adapters.PurgeResult{Seen: 1, Skipped: 1}, res, "a reason filter that selects nothing")
	res = purge(adapters.PurgeOptions{Limit: 1})
	require.Equal(t, 1, res.Purged)
	require.Empty(t, left(0))
}

func TestPurgeMemory(t *testing.T) { runPurge(t, "mem://") }

func TestPurgeKafka(t *testing.T) { runPurge(t, suiteKafka(t)) }

func TestPurgeRabbitMQ(t *testing.T) { runPurge(t, envtest.RabbitMQ(t)) }

func TestPurgeSQS(t *testing.T) {
	runPurge(t, "sqs://us-east-1?endpoint="+envtest.SQS(t)+"&visibility_timeout=5s&wait=1")
}

// TestPublishRefusesEmptyID: a message without an ID is refused before
// anything is sent, since its consumer would dead-letter it as missing-id.
// Catches a Publish that sends the batch's other messages first.
func TestPublishRefusesEmptyID(t *testing.T) {
	b, err := adapters.Open(t.Context(), "mem://")
	require.NoError(t, err)
	defer func() { require.NoError(t, b.Close()) }()
	name := adaptertest.SourceName("emptyid")
	err = b.Publish(t.Context(), name, &consumer.Message{ID: "ok"}, &consumer.Message{Body: []byte("no id")})
	require.ErrorIs(t, err, adapters.ErrEmptyID)
	require.ErrorContains(t, err, "message 2 of 2")
	_, err = b.Backlog(t.Context(), name, adaptertest.ConsumerName)
	require.ErrorIs(t, err, adapters.ErrNoSource, "nothing was sent: the queue was not even created")
}
