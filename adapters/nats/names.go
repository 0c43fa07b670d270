package nats

import "strings"

// StreamName is the stream holding subject: the subject with every '.'
// replaced by '_' (stream names may not contain dots).
func StreamName(subject string) string { return strings.ReplaceAll(subject, ".", "_") }

// RetrySubject is the subject retried copies of source for consumer go to,
// "<source>.<consumer>.retry", in a stream of its own
// (StreamName(RetrySubject(…))), so consumer names of one source never see
// each other's retries.
func RetrySubject(source, consumer string) string { return source + "." + consumer + ".retry" }

// DeadLetterSubject is the subject of the dead-letter stream of source and
// consumer, "<source>.<consumer>.dlq"; its stream is
// StreamName(DeadLetterSubject(…)), "<source>_<consumer>_dlq".
func DeadLetterSubject(source, consumer string) string { return source + "." + consumer + ".dlq" }
