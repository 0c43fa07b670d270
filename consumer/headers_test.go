package consumer_test

import (
	"testing"
	"time"

	"github.com/oncely/oncely/consumer"
)

// TestHeadersReadBack checks the header readers adapters call on every
// message: the values they return, and that a first delivery (no oncely
// headers) costs no allocation. The bug it catches: parsing an absent
// header, whose error allocates on every message.
func TestHeadersReadBack(t *testing.T) {
	at := time.Date(2026, 12, 3, 16, 0, 0, 123456789, time.UTC)
	cases := []struct {
		h         map[string]string
		attempt   int
		notBefore time.Time
	}{
		{nil, 0, time.Time{}},
		{map[string]string{"message-key": "k"}, 0, time.Time{}},
		{map[string]string{consumer.HeaderAttempt: " 3 ", consumer.HeaderRetryNotBefore: at.Format(time.RFC3339Nano)}, 3, at},
		{map[string]string{consumer.HeaderAttempt: "x", consumer.HeaderRetryNotBefore: "soon"}, 0, time.Time{}},
		{map[string]string{consumer.HeaderAttempt: "-1", consumer.HeaderRetryNotBefore: ""}, 0, time.Time{}},
	}
	for _, c := range cases {
		if got := consumer.AttemptFromHeaders(c.h); got != c.attempt {
			t.Errorf("AttemptFromHeaders(%v) = %d, want %d", c.h, got, c.attempt)
		}
		if got := consumer.NotBeforeFromHeaders(c.h); !got.Equal(c.notBefore) {
			t.Errorf("NotBeforeFromHeaders(%v) = %v, want %v", c.h, got, c.notBefore)
		}
	}
	first := map[string]string{"message-id": "m-1", "message-key": "k"}
	if n := testing.AllocsPerRun(100, func() {
		_ = consumer.AttemptFromHeaders(first)
		_ = consumer.NotBeforeFromHeaders(first)
	}); n != 0 {
		t.Fatalf("reading the headers of a first delivery allocated %v times, want 0", n)
	}
}
