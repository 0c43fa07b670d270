package redis

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/oncely/oncely/adapters/adaptertest"
	"github.com/oncely/oncely/consumer"
)

// receiveBound is how long a Receive that must return may take in
// TestSubMillisecondWait: far over every wait it is allowed (Block).
const receiveBound = 10 * time.Second

// subMillisecondClock makes src's next Receive compute a wait of 500µs
// before its next look at the retries: its clock reads t0 first, with that
// look due at t0+500µs, and afterwards t0+later (later 0: the look never
// comes due). onFirst, when not nil, runs in a goroutine at the first
// reading, right before that Receive reads.
func subMillisecondClock(src *Source, later time.Duration, onFirst func()) {
	t0 := time.Now()
	src.recv.Lock()
	src.hk.nextRetryLook = t0.Add(500 * time.Microsecond)
	src.recv.Unlock()
	var calls atomic.Int64
	src.now = func() time.Time {
		if calls.Add(1) == 1 {
			if onFirst != nil {
				go onFirst()
			}
			return t0
		}
		return t0.Add(later)
	}
}

// receiveAsync runs src.Receive(ctx, 10) and reports its result on the
// channel returned.
func receiveAsync(ctx context.Context, src *Source) <-chan error {
	done := make(chan error, 1)
	go func() {
		ds, err := src.Receive(ctx, 10)
		if err == nil && len(ds) == 0 {
			err = errors.New("Receive returned no delivery and no error")
		}
		done <- err
	}()
	return done
}

// awaitReceive waits up to receiveBound for done. A Receive still stuck
// then is woken by an entry published to stream, and t fails.
func awaitReceive(t *testing.T, client goredis.UniversalClient, stream string, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(receiveBound):
		publish(t, client, stream, testMessages("wake", 1)...)
		<-done
		t.Fatalf("Receive did not return within %s: a read computed below 1ms blocked without a bound (BLOCK 0)", receiveBound)
		return nil
	}
}

// TestSubMillisecondWait: when the next look at the retries is less than a
// millisecond away, Receive's read still waits a bounded time (never
// XREADGROUP BLOCK 0, which waits forever): a retry due then is delivered,
// a cancelled ctx and a Close are noticed, each within receiveBound.
func TestSubMillisecondWait(t *testing.T) {
	client := newClient(t)
	cfg := func(stream string) Config {
		return Config{Stream: stream, Consumer: "ledger", Lease: 5 * time.Second, Block: 5 * time.Second}
	}

	t.Run("due retry", func(t *testing.T) {
		stream := adaptertest.SourceName("submilli-retry")
		src := newSource(t, client, cfg(stream))
		publish(t, client, stream, testMessages("retry", 1)...)
		d := adaptertest.ReceiveN(t, src, 1, receiveBound)[0]
		if err := d.Retry(t.Context(), 0, map[string]string{consumer.HeaderAttempt: "2"}); err != nil {
			t.Fatal(err)
		}
		subMillisecondClock(src, time.Millisecond, nil)
		ctx, cancel := context.WithTimeout(t.Context(), 2*receiveBound)
		defer cancel()
		if err := awaitReceive(t, client, stream, receiveAsync(ctx, src)); err != nil {
			t.Fatalf("Receive: %v, want the due retry", err)
		}
	})

	t.Run("ctx", func(t *testing.T) {
		stream := adaptertest.SourceName("submilli-ctx")
		src := newSource(t, client, cfg(stream))
		adaptertest.AssertQuiet(t, src, 10*time.Millisecond) // the first reclaim pass
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		// Cancelled once the read is likely under way (sooner, Receive
		// notices it before reading, which proves nothing but passes).
		subMillisecondClock(src, 0, func() { time.AfterFunc(20*time.Millisecond, cancel) })
		if err := awaitReceive(t, client, stream, receiveAsync(ctx, src)); !errors.Is(err, context.Canceled) {
			t.Errorf("Receive returned %v, want context.Canceled", err)
		}
	})

	t.Run("close", func(t *testing.T) {
		stream := adaptertest.SourceName("submilli-close")
		src := newSource(t, client, cfg(stream))
		adaptertest.AssertQuiet(t, src, 10*time.Millisecond)
		closed := make(chan error, 1)
		subMillisecondClock(src, 0, func() { closed <- src.Close(context.Background()) })
		done := receiveAsync(context.Background(), src)
		if err := awaitReceive(t, client, stream, done); !errors.Is(err, consumer.ErrSourceClosed) {
			t.Errorf("Receive returned %v, want consumer.ErrSourceClosed", err)
		}
		if err := <-closed; err != nil {
			t.Errorf("Close: %v", err)
		}
	})
}
