package adaptertest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/oncely/oncely/consumer"
)

// ConsumerName is the consumer name every subtest uses.
const ConsumerName = "adaptertest"

// Timing of the suite. Retry delays are short so one adapter's run stays
// well under 30 seconds.
const (
	// RetryDelay is the fixed delay of the retry subtest's policy.
	RetryDelay = 300 * time.Millisecond
	// QuietWindow is how long a Source must hand out nothing when nothing
	// is left to deliver.
	QuietWindow = time.Second
	// WaitTimeout bounds every wait for deliveries.
	WaitTimeout = 20 * time.Second
)

// Run runs the conformance suite against h. Each subtest uses a unique source
// name and checks one guarantee every adapter must hold:
//
//   - SettleOnce: every published message is handled and acked exactly once
//     when the handler succeeds, and nothing is redelivered afterwards;
//   - Redelivery: deliveries left unsettled when a Source closes come back on
//     a new Source (Attempt >= 1 and not lower than before), acked ones don't;
//   - RetryDelay: a retried copy is never delivered before its delay, keeps
//     ID, Key and Body and carries the attempt and error headers;
//   - RetryTimeline: a retry comes when the runtime's log says it will
//     (within TimelineSlack), for a delay between two tiers;
//   - DeadLetter: the dead-letter copy keeps ID, Key, Body and headers and
//     carries reason, error, error type, attempt, consumer and original source;
//   - MissingID: a message without ID is dead-lettered with reason missing-id
//     and never reaches the handler;
//   - InvalidID: a message whose ID the runtime refuses (it holds a TAB) is
//     dead-lettered with reason invalid-id, its ID kept, and never reaches
//     the handler, while the messages published with it, on its key, are
//     handled in order;
//   - Backpressure: Receive never hands out more than asked, and a Consumer
//     never holds more than MaxInFlight deliveries;
//   - KeyOrder: messages with one key are handled in publish order while
//     several workers run;
//   - UnkeyedOrder: messages without a key are handled one at a time per
//     partition (per source when unpartitioned) in publish order, with an
//     empty Key, while several workers run; a broker declaring
//     Capabilities().NoOrder (SQS standard) only has each handled once;
//   - Batches: a consumer.BatchHandler's messages are acked only after their
//     batch returned, exactly once, keys in order, a poison message and one
//     a BatchError names dead-lettered alone, nothing redelivered after;
//   - SettleTwice: a settled delivery refuses a second Ack, Retry or
//     DeadLetter with consumer.ErrAlreadySettled and publishes nothing;
//   - CloseKeepsAttempt: clean closes over received, unhandled deliveries
//     never raise Message.Attempt;
//   - CloseReleasesAll: with a Receive outstanding at Close, a new Source
//     gets every unsettled message within CloseDeadline, Attempt unchanged;
//   - ConsumerNames: two consumer names of one source each get every message
//     (Capabilities().FanOut) or split them, as the adapter declares;
//   - CopyPublishFails: a retry or dead-letter copy the broker refuses
//     leaves the original unsettled; the Harness must be a CopyFaulter;
//   - Probe: the Source is a consumer.Prober that answers nil on a live
//     broker and fails on a cancelled ctx.
//
// RunRedrive is a separate entry point: it needs a RedriveHarness.
func Run(t *testing.T, h Harness) {
	t.Run("SettleOnce", func(t *testing.T) { testSettleOnce(t, h) })
	t.Run("Redelivery", func(t *testing.T) { testRedelivery(t, h) })
	t.Run("RetryDelay", func(t *testing.T) { testRetryDelay(t, h) })
	t.Run("RetryTimeline", func(t *testing.T) { testRetryTimeline(t, h) })
	t.Run("DeadLetter", func(t *testing.T) { testDeadLetter(t, h) })
	t.Run("MissingID", func(t *testing.T) { testMissingID(t, h) })
	t.Run("InvalidID", func(t *testing.T) { testInvalidID(t, h) })
	t.Run("Backpressure", func(t *testing.T) { testBackpressure(t, h) })
	t.Run("KeyOrder", func(t *testing.T) { testKeyOrder(t, h) })
	t.Run("UnkeyedOrder", func(t *testing.T) { testUnkeyedOrder(t, h) })
	t.Run("Batches", func(t *testing.T) { testBatches(t, h) })
	t.Run("SettleTwice", func(t *testing.T) { testSettleTwice(t, h) })
	t.Run("CloseKeepsAttempt", func(t *testing.T) { testCloseKeepsAttempt(t, h) })
	t.Run("CloseReleasesAll", func(t *testing.T) { testCloseReleasesAll(t, h) })
	t.Run("ConsumerNames", func(t *testing.T) { testConsumerNames(t, h) })
	t.Run("CopyPublishFails", func(t *testing.T) { testCopyPublishFails(t, h) })
	t.Run("Probe", func(t *testing.T) { testProbe(t, h) })
}

// SourceName returns a unique source name made of lowercase letters, digits
// and dashes, valid for every supported broker.
func SourceName(test string) string {
	return fmt.Sprintf("oncely-%s-%08x", test, rand.Uint32())
}

func msg(id, key, body string) *consumer.Message {
	return &consumer.Message{ID: id, Key: key, Body: []byte(body), Partition: -1, Offset: -1}
}

// run starts a Consumer over src and returns a func that stops it and checks
// that it stopped cleanly.
func run(t *testing.T, src consumer.Source, h consumer.Handler, cfg consumer.Config) (stop func()) {
	t.Helper()
	cfg.Name = ConsumerName
	_, stop = RunConsumer(t, src, h, cfg)
	return stop
}

// waitFor is WaitUntil with WaitTimeout.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	WaitUntil(t, WaitTimeout, what, cond)
}

func closeSource(t testing.TB, src consumer.Source) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), WaitTimeout)
	defer cancel()
	if err := src.Close(ctx); err != nil {
		t.Errorf("Close: %v", err)
	}
}
