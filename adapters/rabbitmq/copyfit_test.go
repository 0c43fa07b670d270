package rabbitmq

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/oncely/oncely/adapters/adaptertest"
	"github.com/oncely/oncely/consumer"
)

// failureHeaders are a failure's headers for m with an 8 KiB stack and a
// 4 KiB error, as the runtime writes them for a panic.
func failureHeaders(m *consumer.Message, reason string) map[string]string {
	h := consumer.FailureHeaders(m, consumer.Failure{Consumer: "ledger", Err: errors.New(strings.Repeat("e", 4<<10)), NextAttempt: 2, Reason: reason})
	h[consumer.HeaderStack] = strings.Repeat("s", 8<<10)
	return h
}

// TestCopyFitsMaxMessageSize sets MaxMessageSize to 8 KiB. A retry copy of
// a 1 KiB message with a stack is trimmed (no stack, body intact) and
// reported trimmed; one of a 9 KiB message cannot fit: Retry fails with
// ErrCopyRefused and leaves the delivery unsettled, and its dead-letter copy
// loses the body for the size and SHA-256 markers, keeping the failure
// context. A small copy is not trimmed.
func TestCopyFitsMaxMessageSize(t *testing.T) {
	const limit = 8 << 10
	queue := uniqueName("fit")
	cleanupTopology(t, queue, "ledger", testTiers)
	src := newSource(t, Config{Queue: queue, Consumer: "ledger", MaxMessageSize: limit})
	big := []byte(strings.Repeat("b", limit+1<<10))
	publish(t, queue,
		&consumer.Message{ID: "small", Body: []byte("tiny")},
		&consumer.Message{ID: "medium", Body: []byte(strings.Repeat("m", 1<<10))},
		&consumer.Message{ID: "big", Body: big})
	ds := map[string]consumer.Delivery{}
	for _, d := range adaptertest.ReceiveN(t, src, 3, 20*time.Second) {
		ds[d.Message().ID] = d
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	trimmed := func(d consumer.Delivery) bool { return d.(consumer.CopyTrimmer).CopyTrimmed() }

	small := ds["small"]
	if err := small.Retry(ctx, 100*time.Millisecond, consumer.FailureHeaders(small.Message(), consumer.Failure{Consumer: "ledger", Err: errors.New("x"), NextAttempt: 2})); err != nil {
		t.Fatal(err)
	}
	if trimmed(small) {
		t.Error("a small copy was reported trimmed")
	}
	medium := ds["medium"]
	if err := medium.Retry(ctx, 100*time.Millisecond, failureHeaders(medium.Message(), "")); err != nil {
		t.Fatalf("retry of a 1 KiB message with an 8 KiB stack: %v", err)
	}
	if !trimmed(medium) {
		t.Error("the trimmed retry copy was not reported trimmed")
	}
	for _, d := range adaptertest.ReceiveN(t, src, 2, 10*time.Second) {
		m := d.Message()
		if m.ID == "medium" && (m.Header(consumer.HeaderStack) != "" || len(m.Body) != 1<<10 || m.Attempt != 2) {
			t.Errorf("retried copy: stack %d bytes, body %d bytes, attempt %d", len(m.Header(consumer.HeaderStack)), len(m.Body), m.Attempt)
		}
		if err := d.Ack(ctx); err != nil {
			t.Fatal(err)
		}
	}

	b := ds["big"]
	err := b.Retry(ctx, 100*time.Millisecond, failureHeaders(b.Message(), ""))
	if !errors.Is(err, consumer.ErrCopyRefused) {
		t.Fatalf("retry of a copy over MaxMessageSize: %v, want ErrCopyRefused", err)
	}
	if err := b.DeadLetter(ctx, failureHeaders(b.Message(), consumer.ReasonRetryRefused)); err != nil {
		t.Fatalf("dead-letter after the refused retry: %v", err)
	}
	if !trimmed(b) {
		t.Error("the body-removed dead-letter copy was not reported trimmed")
	}
	dl := browse(t, src.topo.dlq(), KeyHeaderDefault)
	if len(dl) != 1 {
		t.Fatalf("%d dead letters, want 1", len(dl))
	}
	sum := sha256.Sum256(big)
	m := dl[0]
	if m.ID != "big" || len(m.Body) != 0 || m.Header(consumer.HeaderBodyRemovedSize) != strconv.Itoa(len(big)) ||
		m.Header(consumer.HeaderBodyRemovedSHA256) != hex.EncodeToString(sum[:]) ||
		m.Header(consumer.HeaderDeadLetterReason) != consumer.ReasonRetryRefused || m.Header(consumer.HeaderError) == "" {
		t.Errorf("dead letter %q: body %d bytes, size %q, sha %q, reason %q, error %d bytes", m.ID, len(m.Body),
			m.Header(consumer.HeaderBodyRemovedSize), m.Header(consumer.HeaderBodyRemovedSHA256), m.Header(consumer.HeaderDeadLetterReason), len(m.Header(consumer.HeaderError)))
	}
	if n := depth(t, queue); n != 0 {
		t.Errorf("source holds %d", n)
	}
}

// TestCopyHeadersFitFrame receives a message whose own headers fill most of
// the connection's 128 KiB frame: its retry copy, with an 8 KiB stack and a
// 4 KiB error, would not fit one content-header frame (RabbitMQ would close
// the connection, and the redelivery would do the same again). The stack is
// dropped and the error cut, and the copy arrives.
func TestCopyHeadersFitFrame(t *testing.T) {
	queue := uniqueName("frame")
	cleanupTopology(t, queue, "ledger", testTiers)
	src := newSource(t, Config{Queue: queue, Consumer: "ledger"})
	publish(t, queue, &consumer.Message{ID: "wide", Body: []byte("x"), Headers: map[string]string{"bulk": strings.Repeat("h", 120<<10)}})
	d := adaptertest.ReceiveN(t, src, 1, 20*time.Second)[0]
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := d.Retry(ctx, 100*time.Millisecond, failureHeaders(d.Message(), "")); err != nil {
		t.Fatal(err)
	}
	if !d.(consumer.CopyTrimmer).CopyTrimmed() {
		t.Error("not reported trimmed")
	}
	m := adaptertest.ReceiveN(t, src, 1, 10*time.Second)[0].Message()
	if m.ID != "wide" || m.Attempt != 2 || len(m.Header("bulk")) != 120<<10 || m.Header(consumer.HeaderStack) != "" || m.Header(consumer.HeaderError) == "" {
		t.Errorf("copy %q attempt %d: bulk %d bytes, stack %d bytes, error %d bytes", m.ID, m.Attempt, len(m.Header("bulk")),
			len(m.Header(consumer.HeaderStack)), len(m.Header(consumer.HeaderError)))
	}
}

// TestLongIDCopies: an ID of 256 bytes (the runtime's default MaxIDLength)
// cannot be a message_id property (an AMQP short string, 255 bytes; writing
// it fails the frame and closes the connection, on every redelivery again).
// It is published in the message-id header, and its retry and dead-letter
// copies keep it there; the session stays up.
func TestLongIDCopies(t *testing.T) {
	id := strings.Repeat("i", 256)
	queue := uniqueName("longid")
	cleanupTopology(t, queue, "ledger", testTiers)
	src := newSource(t, Config{Queue: queue, Consumer: "ledger"})
	publish(t, queue, &consumer.Message{ID: id, Body: []byte("x")})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	d := adaptertest.ReceiveN(t, src, 1, 20*time.Second)[0]
	if d.Message().ID != id {
		t.Fatalf("received ID of %d bytes", len(d.Message().ID))
	}
	if err := d.Retry(ctx, 100*time.Millisecond, consumer.FailureHeaders(d.Message(), consumer.Failure{Consumer: "ledger", NextAttempt: 2})); err != nil {
		t.Fatalf("retry: %v", err)
	}
	d = adaptertest.ReceiveN(t, src, 1, 10*time.Second)[0]
	if m := d.Message(); m.ID != id || m.Attempt != 2 {
		t.Fatalf("retried copy: ID of %d bytes, attempt %d", len(m.ID), m.Attempt)
	}
	if err := d.DeadLetter(ctx, consumer.FailureHeaders(d.Message(), consumer.Failure{Consumer: "ledger", Reason: consumer.ReasonExhausted})); err != nil {
		t.Fatalf("dead-letter: %v", err)
	}
	if dl := browse(t, src.topo.dlq(), KeyHeaderDefault); len(dl) != 1 || dl[0].ID != id {
		t.Errorf("dead letters %d, want 1 with the long ID", len(dl))
	}
	if !src.Connected() {
		t.Error("the session ended")
	}
}
