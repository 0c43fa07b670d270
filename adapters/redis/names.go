package redis

import (
	"strings"

	goredis "github.com/redis/go-redis/v9"

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

// HashTag returns what Redis Cluster hashes to find key's slot: the text
// between key's first '{' and the first '}' after it when that text is not
// empty (tagged is true), else the whole key. Every key the adapter derives
// from a stream begins with the stream's name, so when the stream is
// tagged ("{orders}", "app:{orders}") all of them share its slot, which
// the settlement scripts need on Redis Cluster (see Config.Client).
func HashTag(key string) (tag string, tagged bool) {
	open := strings.IndexByte(key, '{')
	if open < 0 {
		return key, false
	}
	end := strings.IndexByte(key[open+1:], '}')
	if end <= 0 {
		return key, false
	}
	return key[open+1 : open+1+end], true
}

// sharded reports whether client spreads keys over several servers by hash
// slot (Redis Cluster, or go-redis's client-side Ring): then every key one
// script touches must share a slot.
func sharded(client goredis.UniversalClient) bool {
	switch client.(type) {
	case *goredis.ClusterClient, *goredis.Ring:
		return true
	}
	return false
}
