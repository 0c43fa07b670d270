package nats

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestReplicasOfCreatedStreams: the source, retry and dead-letter streams New
// creates get Config.Replicas copies (one when 0), and more replicas than a
// single server has fail New at once with an error naming the stream.
func TestReplicasOfCreatedStreams(t *testing.T) {
	c := connect(t)
	for _, replicas := range []int{0, 1} {
		t.Run(fmt.Sprint("replicas=", replicas), func(t *testing.T) {
			source := fmt.Sprintf("replicas.%d.%d", replicas, time.Now().UnixNano())
			src := c.newSource(t, Config{Source: source, Consumer: "c", Replicas: replicas})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			defer func() { _ = src.Close(ctx) }()
			for _, subject := range []string{source, RetrySubject(source, "c"), DeadLetterSubject(source, "c")} {
				s, err := c.js.Stream(ctx, StreamName(subject))
				if err != nil {
					t.Fatalf("stream of %s: %v", subject, err)
				}
				if got := s.CachedInfo().Config.Replicas; got != 1 {
					t.Errorf("stream of %s has %d replicas, want 1", subject, got)
				}
			}
		})
	}
	t.Run("replicas=3 on one server", func(t *testing.T) {
		source := fmt.Sprintf("replicas.3.%d", time.Now().UnixNano())
		c.cleanup(t, source, "c")
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		start := time.Now()
		src, err := New(ctx, Config{URL: c.url, Source: source, Consumer: "c", Replicas: 3, AckWait: testAckWait})
		if err == nil {
			_ = src.Close(ctx)
			t.Fatal("New created 3-replica streams on a single server")
		}
		if ctx.Err() != nil {
			t.Fatalf("New ran into its deadline after %s instead of failing: %v", time.Since(start), err)
		}
		if !strings.Contains(err.Error(), "stream "+StreamName(DeadLetterSubject(source, "c"))) {
			t.Errorf("error %q does not name the stream it could not create", err)
		}
		t.Logf("New failed after %s: %v", time.Since(start), err)
	})
}
