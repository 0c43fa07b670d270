package consumer

import (
	"maps"
	"time"
)

// Message is one record or message as the handler sees it. Adapters fill it
// from the broker; the runtime never changes ID, Key or Body.
type Message struct {
	// ID is the producer-generated identity of the message. It is never
	// regenerated on retry, dead-lettering or redrive, so it is the dedupe key.
	ID string

	// Key is the ordering key (Kafka record key, a header, or an SQS FIFO
	// message group). Messages with equal keys are handled in order.
	Key string

	// Body is the payload, unchanged from the broker.
	Body []byte

	// Headers are the message's headers with string values. Adapters convert
	// broker-native header types to strings; failure context is carried in
	// headers prefixed with "oncely-" (see HeaderAttempt and friends).
	Headers map[string]string

	// Source is the topic or queue the message was read from. For a retried
	// copy it is the retry topic or queue; the original source is in
	// HeaderOriginalSource.
	Source string

	// Attempt is 1 on first delivery and counts handler attempts: clean
	// closes and deliveries that were never handled do not raise it.
	// Adapters derive it from HeaderAttempt, which the runtime writes on
	// every retry copy (SQS: from its receive count, which the adapter keeps
	// from rising on a clean close), never from process memory alone.
	Attempt int

	// Partition is the Kafka partition, or -1 where the broker has none.
	Partition int32

	// Offset is the message's position where the broker numbers messages:
	// the Kafka offset within its partition, the JetStream stream
	// sequence; -1 where the broker has none. Failure context carries it
	// as HeaderOriginalOffset.
	Offset int64

	// Timestamp is the broker's timestamp for the message, zero if unknown.
	Timestamp time.Time

	// Coordinates holds other broker coordinates for logs and failure context,
	// such as an AMQP delivery tag or an SQS receipt handle. Informational only.
	Coordinates map[string]string
}

// Header returns the header value for name, or "" when absent.
func (m *Message) Header(name string) string {
	if m.Headers == nil {
		return ""
	}
	return m.Headers[name]
}

// Clone returns a deep copy of m.
func (m *Message) Clone() *Message {
	c := *m
	c.Body = append([]byte(nil), m.Body...)
	c.Headers = maps.Clone(m.Headers)
	c.Coordinates = maps.Clone(m.Coordinates)
	return &c
}
