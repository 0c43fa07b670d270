package nats

import (
	"strings"

	"github.com/oncely/oncely/internal/names"
)

// StreamName is the stream holding subject. A source's stream is the
// subject with every '.' replaced by '_' (stream names may not contain
// dots): two sources that differ only there cannot share a server, since a
// stream captures one subject (New refuses the second). The retry and
// dead-letter streams of a pair, the subjects RetrySubject and
// DeadLetterSubject build, are named by pairStream: no two pairs share one.
// A subject of that shape (three or more tokens, the last "retry" or "dlq")
// holding a '_' is named as a pair's stream even when it is a source's.
func StreamName(subject string) string {
	tokens := strings.Split(subject, ".")
	n := len(tokens)
	if n < 3 || tokens[n-1] != "retry" && tokens[n-1] != "dlq" || !strings.Contains(subject, "_") {
		return strings.ReplaceAll(subject, ".", "_")
	}
	return pairStream(tokens[:n-2], tokens[n-2], tokens[n-1])
}

// pairStream names a stream of the pair (source, consumer) for kind ("retry"
// or "dlq"), the source given by its tokens. When neither holds '_' it is
// "<source>_<consumer>_<kind>" with the source's '.' as '_' (the names of
// earlier versions); otherwise each source token and the consumer are
// escaped (every byte other than a letter or digit written as '-' and two
// hex digits: "a_b" is "a-5fb"), joined by '_', and an empty part precedes
// the kind: "<source>_<consumer>__<kind>". Only an escaped name has that
// empty part, and neither form of a token holds '_', so the pair and kind
// can be read back from the stream name.
func pairStream(source []string, consumer, kind string) string {
	escape := func(s string) string { return names.Escape(s, '-', names.Alnum) }
	parts := make([]string, 0, len(source)+3)
	for _, t := range source {
		parts = append(parts, escape(t))
	}
	return strings.Join(append(parts, escape(consumer), "", kind), "_")
}

// RetrySubject is the subject retried copies of source for consumer go to,
// "<source>.<consumer>.retry", in a stream of its own
// (StreamName(RetrySubject(…))), so consumer names of one source never see
// each other's retries. Consumer names hold no '.', so no two pairs share
// a retry subject.
func RetrySubject(source, consumer string) string { return source + "." + consumer + ".retry" }

// DeadLetterSubject is the subject of the dead-letter stream of source and
// consumer, "<source>.<consumer>.dlq"; its stream is
// StreamName(DeadLetterSubject(…)), "<source>_<consumer>_dlq" when neither
// name holds '_'. No two pairs share a dead-letter subject or stream.
func DeadLetterSubject(source, consumer string) string { return source + "." + consumer + ".dlq" }
