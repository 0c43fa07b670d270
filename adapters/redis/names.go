package redis

import (
	"strings"

	"github.com/oncely/oncely/internal/names"
)

// RetryStream is the stream holding the retry copies of (stream, consumer)
// once they are due, and redriven dead letters:
// "<stream>.<consumer>.retry" for a consumer name without '.'; any other is
// escaped (see pairPrefix). No two (stream, consumer) pairs share one.
func RetryStream(stream, consumer string) string { return pairPrefix(stream, consumer) + "retry" }

// DelayedKey is the sorted set holding retry copies of (stream, consumer)
// until they are due (score: due time in Unix milliseconds, Redis's clock):
// "<stream>.<consumer>.delayed" for a consumer name without '.'; any other
// is escaped (see pairPrefix). No two (stream, consumer) pairs share one.
func DelayedKey(stream, consumer string) string { return pairPrefix(stream, consumer) + "delayed" }

// DeadLetterStream is the dead-letter stream of (stream, consumer):
// "<stream>.<consumer>.dlq" for a consumer name without '.'; any other is
// escaped (see pairPrefix). No two (stream, consumer) pairs share one.
func DeadLetterStream(stream, consumer string) string { return pairPrefix(stream, consumer) + "dlq" }

// pairPrefix begins the derived keys of (stream, consumer):
// "<stream>.<consumer>." for a consumer name without '.', else
// "<stream>.<escaped consumer>.." with every '.' and '_' written as '_' and
// two hex digits ("a.b" is "a_2eb"). The part before the kind is empty
// only for an escaped name, and neither form holds '.', so the stream and
// consumer can be read back from the key.
func pairPrefix(stream, consumer string) string {
	if !strings.Contains(consumer, ".") {
		return stream + "." + consumer + "."
	}
	return stream + "." + names.Escape(consumer, '_', func(c byte) bool { return c != '.' }) + ".."
}
