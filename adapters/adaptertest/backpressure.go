package adaptertest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/oncely/oncely/consumer"
)

func testBackpressure(t *testing.T, h Harness) {
	t.Run("ReceiveMax", func(t *testing.T) {
		const n, most = 30, 4
		name := SourceName("recvmax")
		msgs := make([]*consumer.Message, n)
		for i := range msgs {
			msgs[i] = msg(fmt.Sprintf("max-%02d", i), fmt.Sprintf("k%d", i%3), "b")
		}
		h.Publish(t, name, msgs...)
		src := h.NewSource(t, name, ConsumerName)
		ctx, cancel := context.WithTimeout(context.Background(), WaitTimeout)
		defer cancel()
		got := 0
		for got < n {
			ds, err := src.Receive(ctx, most)
			if err != nil {
				t.Fatalf("after %d deliveries: %v", got, err)
			}
			if len(ds) > most {
				t.Fatalf("Receive(max=%d) returned %d deliveries", most, len(ds))
			}
			for _, d := range ds {
				if err := d.Ack(ctx); err != nil {
					t.Fatal(err)
				}
			}
			got += len(ds)
		}
		if got != n {
			t.Errorf("received %d, want %d", got, n)
		}
		closeSource(t, src)
	})

	t.Run("MaxInFlight", func(t *testing.T) {
		const n, inFlight, workers = 40, 4, 2
		name := SourceName("inflight")
		msgs := make([]*consumer.Message, n)
		for i := range msgs {
			msgs[i] = msg(fmt.Sprintf("inflight-%02d", i), fmt.Sprintf("k%d", i), "b")
		}
		h.Publish(t, name, msgs...)

		release := make(chan struct{})
		var mu sync.Mutex
		running, handled := 0, 0
		src := NewCountingSource(h.NewSource(t, name, ConsumerName))
		stop := run(t, src, consumer.HandlerFunc(func(ctx context.Context, _ *consumer.Message) error {
			mu.Lock()
			running++
			mu.Unlock()
			defer func() {
				mu.Lock()
				running--
				handled++
				mu.Unlock()
			}()
			select {
			case <-release:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}), consumer.Config{Concurrency: workers, MaxInFlight: inFlight})

		deadline := time.Now().Add(WaitTimeout)
		for {
			mu.Lock()
			r := running
			mu.Unlock()
			st := src.Stats()
			if r == workers && st.Outstanding == inFlight {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %d blocked workers and %d deliveries outstanding: %d running, %+v", workers, inFlight, r, st)
			}
			time.Sleep(5 * time.Millisecond)
		}
		// Intake must stay stopped while every slot is taken.
		deadline = time.Now().Add(300 * time.Millisecond)
		for time.Now().Before(deadline) {
			if st := src.Stats(); st.Received != inFlight {
				t.Fatalf("%d deliveries received while the handlers block, want %d (MaxInFlight)", st.Received, inFlight)
			}
			time.Sleep(10 * time.Millisecond)
		}
		close(release)
		waitFor(t, "every message to be acked", func() bool { return src.Stats().Acked >= n })
		stop()
		st := src.Stats()
		if st.MaxOutstanding > inFlight || st.OverAsked != 0 {
			t.Errorf("%d deliveries outstanding at once (MaxInFlight %d), %d Receive calls returned more than asked", st.MaxOutstanding, inFlight, st.OverAsked)
		}
		if st.Acked != n || st.Double != 0 {
			t.Errorf("settlements: %+v, want %d acks", st, n)
		}
	})
}
