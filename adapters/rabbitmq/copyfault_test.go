package rabbitmq

import (
	"context"
	"errors"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/oncely/oncely/adapters/adaptertest"
	"github.com/oncely/oncely/consumer"
)

// copyFault breaks the queue a retry or dead-letter copy goes to, while a
// Source runs (it declared and verified its topology already).
type copyFault func(t *testing.T, target string)

// unroutable deletes the target queue: the mandatory publish through the
// default exchange is returned (basic.return), then confirmed.
func unroutable(t *testing.T, target string) {
	ch, closeConn := openChannel(t)
	defer closeConn()
	if _, err := ch.QueueDelete(target, false, false, false); err != nil {
		t.Fatal(err)
	}
}

// refusing replaces the target queue by a full one (x-max-length 0,
// x-overflow reject-publish): the broker nacks every publish to it.
func refusing(t *testing.T, target string) {
	unroutable(t, target)
	ch, closeConn := openChannel(t)
	defer closeConn()
	if _, err := ch.QueueDeclare(target, true, false, false, false, amqp.Table{"x-max-length": int64(0), "x-overflow": "reject-publish"}); err != nil {
		t.Fatal(err)
	}
}

// TestCopyPublishFaults makes the copy of a retry or dead-letter unroutable
// or nacked by the broker: the settlement fails with ErrUnroutable or
// ErrNotConfirmed, the original is not acked, the session stays up (a
// nacked copy renews only the publish channel), a deleted queue is
// declared again, and after the Source closes the message
// comes back (same ID, Attempt 1) to a new Source; no copy is left anywhere.
func TestCopyPublishFaults(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault copyFault
		want  error
	}{
		{"unroutable", unroutable, ErrUnroutable},
		{"nacked", refusing, ErrNotConfirmed},
	} {
		for _, what := range []string{"retry", "dead-letter"} {
			t.Run(tc.name+"/"+what, func(t *testing.T) {
				queue := uniqueName("copyfault")
				cleanupTopology(t, queue, "ledger", testTiers)
				src := newSource(t, Config{Queue: queue, Consumer: "ledger"})
				publish(t, queue, &consumer.Message{ID: "victim", Body: []byte("payload")})
				d := adaptertest.ReceiveN(t, src, 1, 20*time.Second)[0]
				target := src.topo.dlq()
				if what == "retry" {
					target = src.retryQueueFor(100 * time.Millisecond)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				pub := d.(*delivery).sess.pub.Load()
				tc.fault(t, target)
				h := consumer.FailureHeaders(d.Message(), consumer.Failure{Consumer: "ledger", Err: errors.New("boom"), NextAttempt: 2, Reason: consumer.ReasonPermanent})
				var err error
				if what == "retry" {
					err = d.Retry(ctx, 100*time.Millisecond, h)
				} else {
					err = d.DeadLetter(ctx, h)
				}
				if !errors.Is(err, tc.want) {
					t.Errorf("%s with a broken copy: %v, want %v", what, err, tc.want)
				}
				select {
				case <-d.(consumer.Leased).Lost():
					t.Fatal("a failed copy publish ended the session")
				default:
				}
				// Catches: a nacked copy leaving the channel in place, which
				// on a RabbitMQ 3.10 cluster nacks every later copy after a
				// queue leader failed over.
				if renewed := d.(*delivery).sess.pub.Load() != pub; renewed != errors.Is(tc.want, ErrNotConfirmed) {
					t.Errorf("publish channel renewed: %v after a copy failing with %v", renewed, tc.want)
				}
				if _, ok := tryDepth(t, target); !ok {
					t.Errorf("%s was not declared again after the failed copy", target)
				}
				if err := src.Close(ctx); err != nil {
					t.Fatal(err)
				}
				if n, ok := tryDepth(t, target); ok && n != 0 {
					t.Errorf("%s holds %d copies", target, n)
				}
				unroutable(t, target) // let the new Source declare it as it wants
				back := adaptertest.ReceiveN(t, newSource(t, Config{Queue: queue, Consumer: "ledger"}), 1, 10*time.Second)[0].Message()
				if back.ID != "victim" || back.Attempt != 1 || string(back.Body) != "payload" {
					t.Errorf("came back as %q attempt %d body %q", back.ID, back.Attempt, back.Body)
				}
			})
		}
	}
}
