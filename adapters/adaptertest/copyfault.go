package adaptertest

import (
	"context"
	"testing"

	"github.com/oncely/oncely/consumer"
)

// CopyOp names the copy publish a CopyFaulter makes fail.
type CopyOp string

// The copy publishes of Delivery.Retry and Delivery.DeadLetter.
const (
	CopyRetry      CopyOp = "retry"
	CopyDeadLetter CopyOp = "dead-letter"
)

// CopyFaulter is implemented by a Harness that can make its broker refuse a
// retry or dead-letter copy: a produce error (Kafka), a nacked or unroutable
// publish (RabbitMQ), a send error (SQS), an injected fault (memory). The
// CopyPublishFails case needs it and fails for a Harness without it.
type CopyFaulter interface {
	// FailNextCopy makes the next op copy published for source fail: the
	// broker stores nothing for it, so the Retry or DeadLetter call must
	// return an error and leave the original unsettled. Later copies succeed.
	FailNextCopy(t testing.TB, source string, op CopyOp)
}

// testCopyPublishFails: when the broker refuses a retry or dead-letter copy,
// Retry or DeadLetter returns an error and does not settle the original: it
// comes back on a new Source once the first closes, no copy exists, nothing
// is lost.
func testCopyPublishFails(t *testing.T, h Harness) {
	f, ok := h.(CopyFaulter)
	if !ok {
		t.Fatalf("the harness (%T) does not implement adaptertest.CopyFaulter: every adapter must show that a failed copy publish leaves the original unsettled", h)
	}
	for _, op := range []CopyOp{CopyRetry, CopyDeadLetter} {
		t.Run(string(op), func(t *testing.T) {
			name := SourceName("copyfault")
			orig := msg("copyfault-"+string(op), "k", "body")
			orig.Headers = map[string]string{"x-custom": "kept"}
			h.Publish(t, name, orig)

			first := h.NewSource(t, name, ConsumerName)
			d := ReceiveN(t, first, 1, WaitTimeout)[0]
			ctx, cancel := context.WithTimeout(context.Background(), WaitTimeout)
			defer cancel()
			f.FailNextCopy(t, name, op)
			var err error
			if op == CopyRetry {
				err = d.Retry(ctx, RetryDelay, retryHeaders(d.Message(), "fails", RetryDelay))
			} else {
				err = d.DeadLetter(ctx, deadLetterHeaders(d.Message(), "fails"))
			}
			if err == nil {
				t.Errorf("%s returned nil although the broker refused its copy", op)
			}
			closeSource(t, first)

			second := h.NewSource(t, name, ConsumerName)
			back := ReceiveN(t, second, 1, CloseDeadline)[0]
			m := back.Message()
			if m.ID != orig.ID || string(m.Body) != string(orig.Body) || m.Header("x-custom") != "kept" {
				t.Errorf("got %q body %q headers %v, want the original %q back", m.ID, m.Body, m.Headers, orig.ID)
			}
			if m.Header(consumer.HeaderError) != "" {
				t.Errorf("%s came back as a copy (%s = %q), want the original", m.ID, consumer.HeaderError, m.Header(consumer.HeaderError))
			}
			if err := back.Ack(ctx); err != nil {
				t.Fatalf("ack %s: %v", m.ID, err)
			}
			AssertQuiet(t, second, RetryDelay+QuietWindow)
			closeSource(t, second)
			if dl := h.DeadLetters(t, name, ConsumerName, 1, QuietWindow); len(dl) != 0 {
				t.Errorf("%d dead letters, want none: the refused copy must not be stored", len(dl))
			}
		})
	}
}
