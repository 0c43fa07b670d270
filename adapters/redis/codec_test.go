package redis

import (
	"maps"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/oncely/oncely/consumer"
)

// TestCodecMessage checks an entry's message: the ID, key and body fields
// fill ID, Key and Body and are not headers (a plain entry has no Headers
// at all), every other field is a header, and an entry without a key field
// has no Key (never its ID: unkeyed messages share their stream's lane, see
// consumer.Ordering). The bug it catches: the ID and key fields copied
// into Headers, which the package doc says they are not (and which costs
// the map of every plain entry).
func TestCodecMessage(t *testing.T) {
	cases := []struct {
		name    string
		values  map[string]any
		id, key string
		headers map[string]string
		attempt int
	}{
		{"plain", map[string]any{"message-id": "m-1", "message-key": "k", "body": "b"}, "m-1", "k", nil, 1},
		{"no key", map[string]any{"message-id": "m-1", "body": "b"}, "m-1", "", nil, 1},
		{"no id", map[string]any{"body": "b"}, "", "", nil, 1},
		{"headers", map[string]any{"message-id": "m-1", "body": "b", "x-custom": "v", consumer.HeaderAttempt: "3"}, "m-1", "",
			map[string]string{"x-custom": "v", consumer.HeaderAttempt: "3"}, 3},
	}
	for _, c := range cases {
		m := defaultCodec.message("s", goredis.XMessage{ID: "1700000000000-0", Values: c.values}, 1)
		if m.ID != c.id || m.Key != c.key || string(m.Body) != "b" || m.Attempt != c.attempt {
			t.Errorf("%s: got ID %q Key %q Body %q Attempt %d, want %q %q %q %d", c.name, m.ID, m.Key, m.Body, m.Attempt, c.id, c.key, "b", c.attempt)
		}
		if !maps.Equal(m.Headers, c.headers) || (c.headers == nil && m.Headers != nil) {
			t.Errorf("%s: Headers %v, want %v", c.name, m.Headers, c.headers)
		}
		if m.Coordinates[CoordinateStream] != "s" || m.Coordinates[CoordinateEntryID] != "1700000000000-0" || m.Timestamp.UnixMilli() != 1700000000000 {
			t.Errorf("%s: Coordinates %v Timestamp %v", c.name, m.Coordinates, m.Timestamp)
		}
	}
	e := goredis.XMessage{ID: "1700000000000-0", Values: map[string]any{"message-id": "m-1", "message-key": "k", "body": "payload"}}
	t.Logf("allocations per plain message: %v", testing.AllocsPerRun(1000, func() { _ = defaultCodec.message("s", e, 1) }))
}
