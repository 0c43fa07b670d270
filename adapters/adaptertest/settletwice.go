package adaptertest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/oncely/oncely/consumer"
)

// retryHeaders returns the headers the runtime writes on a retried copy of m
// due after delay.
func retryHeaders(m *consumer.Message, errText string, after time.Duration) map[string]string {
	return consumer.FailureHeaders(m, consumer.Failure{
		Consumer: ConsumerName, Err: errors.New(errText), NextAttempt: m.Attempt + 1, NotBefore: time.Now().Add(after),
	})
}

// deadLetterHeaders returns the headers the runtime writes on a copy of m
// dead-lettered with reason permanent.
func deadLetterHeaders(m *consumer.Message, errText string) map[string]string {
	return consumer.FailureHeaders(m, consumer.Failure{
		Consumer: ConsumerName, Err: errors.New(errText), Reason: consumer.ReasonPermanent, NextAttempt: m.Attempt,
	})
}

// testSettleTwice: a delivery settled once (Ack, Retry or DeadLetter) refuses
// every further settlement with an error wrapping consumer.ErrAlreadySettled,
// and the refused settlement publishes nothing: exactly one retried copy and
// one dead letter exist afterwards, and the acked message never comes back.
func testSettleTwice(t *testing.T, h Harness) {
	name := SourceName("twice")
	msgs := []*consumer.Message{msg("twice-ack", "k0", "b0"), msg("twice-retry", "k1", "b1"), msg("twice-dead", "k2", "b2")}
	h.Publish(t, name, msgs...)

	src := h.NewSource(t, name, ConsumerName)
	got := ReceiveN(t, src, len(msgs), WaitTimeout)
	slices.SortFunc(got, func(a, b consumer.Delivery) int { return strings.Compare(a.Message().ID, b.Message().ID) })
	ack, dead, retried := got[0], got[1], got[2]
	ctx, cancel := context.WithTimeout(context.Background(), WaitTimeout)
	defer cancel()
	settle := map[string]func(consumer.Delivery) error{
		"Ack": func(d consumer.Delivery) error { return d.Ack(ctx) },
		"Retry": func(d consumer.Delivery) error {
			return d.Retry(ctx, RetryDelay, retryHeaders(d.Message(), "again", RetryDelay))
		},
		"DeadLetter": func(d consumer.Delivery) error { return d.DeadLetter(ctx, deadLetterHeaders(d.Message(), "again")) },
	}
	for _, first := range []struct {
		d  consumer.Delivery
		op string
	}{{ack, "Ack"}, {retried, "Retry"}, {dead, "DeadLetter"}} {
		id := first.d.Message().ID
		if err := settle[first.op](first.d); err != nil {
			t.Fatalf("%s %s: %v", first.op, id, err)
		}
		for _, again := range []string{"Ack", "Retry", "DeadLetter"} {
			if err := settle[again](first.d); !errors.Is(err, consumer.ErrAlreadySettled) {
				t.Errorf("%s of %s after %s returned %v, want an error wrapping consumer.ErrAlreadySettled", again, id, first.op, err)
			}
		}
	}

	// The refused settlements must have published nothing: one retried copy
	// of twice-retry, one dead letter of twice-dead, nothing else.
	copies := ReceiveN(t, src, 1, WaitTimeout)
	if m := copies[0].Message(); m.ID != "twice-retry" || m.Attempt != 2 {
		t.Errorf("after the settlements got %q with Attempt %d, want the retried copy of twice-retry with Attempt 2", m.ID, m.Attempt)
	}
	if err := copies[0].Ack(ctx); err != nil {
		t.Fatalf("ack the retried copy: %v", err)
	}
	AssertQuiet(t, src, RetryDelay+QuietWindow)
	closeSource(t, src)
	dl := h.DeadLetters(t, name, ConsumerName, 2, QuietWindow)
	var ids []string
	for _, m := range dl {
		ids = append(ids, m.ID)
	}
	if !slices.Equal(ids, []string{"twice-dead"}) {
		t.Errorf("dead letters %s, want exactly [twice-dead]", fmt.Sprint(ids))
	}
}
