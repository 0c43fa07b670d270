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

// runMatch: RedriveOptions.Match and PurgeOptions.Match select exactly the
// dead letters they report true for, on top of the other filters. Six dead
// letters with two failures; a redrive whose Match picks m1, m3 and m4
// moves exactly those three back to the source (counted and named on
// arrival) and leaves the other three; a dry-run purge matching m5 counts
// it; a purge matching m5 and m6 with Reason set deletes them; m2 is left.
// Catches a Match ignored (everything moves), inverted, or applied only on
// some brokers' path, and a purge that skips Match.
func runMatch(t *testing.T, url string) {
	b, err := adapters.Open(t.Context(), url)
	require.NoError(t, err)
	defer func() { require.NoError(t, b.Close()) }()
	h := brokerHarness{b}
	name := adaptertest.SourceName("match")
	ids := []string{"m1", "m2", "m3", "m4", "m5", "m6"}
	var msgs []*consumer.Message
	for i, id := range ids {
		msgs = append(msgs, &consumer.Message{ID: id, Key: id, Body: []byte{byte('a' + i)}})
	}
	h.Publish(t, name, msgs...)
	src := h.NewSource(t, name, adaptertest.ConsumerName)
	ctx, cancel := context.WithTimeout(t.Context(), 3*adaptertest.WaitTimeout)
	defer cancel()
	for _, d := range adaptertest.ReceiveN(t, src, len(ids), adaptertest.WaitTimeout) {
		m := d.Message()
		cause := "timeout calling bank"
		if m.ID == "m2" || m.ID == "m4" || m.ID == "m6" {
			cause = "invalid amount"
		}
		headers := consumer.FailureHeaders(m, consumer.Failure{
			Consumer: adaptertest.ConsumerName, Err: errors.New(cause), Reason: consumer.ReasonPermanent, NextAttempt: m.Attempt,
		})
		require.NoError(t, d.DeadLetter(ctx, headers))
	}
	require.Len(t, h.DeadLetters(t, name, adaptertest.ConsumerName, len(ids), adaptertest.WaitTimeout), len(ids))

	in := func(set ...string) func(adapters.DeadLetter) bool {
		return func(d adapters.DeadLetter) bool { return slices.Contains(set, d.Message.ID) }
	}
	left := func(n int) []string {
		t.Helper()
		var out []string
		for _, m := range h.DeadLetters(t, name, adaptertest.ConsumerName, n, adaptertest.QuietWindow) {
			out = append(out, m.ID)
		}
		slices.Sort(out)
		return out
	}

	res, err := b.Redrive(ctx, name, adaptertest.ConsumerName, adapters.RedriveOptions{Match: in("m1", "m3", "m4")})
	require.NoError(t, err)
	require.Equal(t, adapters.RedriveResult{Seen: 6, Redriven: 3, Skipped: 3}, res)
	var arrived []string
	for _, d := range adaptertest.ReceiveN(t, src, 3, adaptertest.WaitTimeout) {
		arrived = append(arrived, d.Message().ID)
		require.NoError(t, d.Ack(ctx))
	}
	slices.Sort(arrived)
	require.Equal(t, []string{"m1", "m3", "m4"}, arrived, "exactly the matching IDs arrive on the source")
	adaptertest.AssertQuiet(t, src, adaptertest.QuietWindow)
	require.NoError(t, src.Close(ctx))
	require.Equal(t, []string{"m2", "m5", "m6"}, left(3), "the others stay in the dead-letter destination")

	pres, err := b.Purge(ctx, name, adaptertest.ConsumerName, adapters.PurgeOptions{Match: in("m5"), DryRun: true})
	require.NoError(t, err)
	require.Equal(t, adapters.PurgeResult{Seen: 3, Purged: 1, Skipped: 2}, pres, "dry run")
	pres, err = b.Purge(ctx, name, adaptertest.ConsumerName, adapters.PurgeOptions{Reason: consumer.ReasonPermanent, Match: in("m5", "m6")})
	require.NoError(t, err)
	require.Equal(t, adapters.PurgeResult{Seen: 3, Purged: 2, Skipped: 1}, pres)
	require.Equal(t, []string{"m2"}, left(1))
}

func TestMatchMemory(t *testing.T) { runMatch(t, "mem://") }

func TestMatchKafka(t *testing.T) { runMatch(t, suiteKafka(t)) }

func TestMatchRabbitMQ(t *testing.T) { runMatch(t, envtest.RabbitMQ(t)) }

func TestMatchSQS(t *testing.T) {
	runMatch(t, "sqs://us-east-1?endpoint="+envtest.SQS(t)+"&visibility_timeout=5s&wait=1")
}

func TestMatchRedis(t *testing.T) { runMatch(t, envtest.Redis(t)+"?lease=5s") }

func TestMatchNATS(t *testing.T) { runMatch(t, envtest.NATS(t)) }
