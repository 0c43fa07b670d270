package nats

import (
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/oncely/oncely/consumer"
)

// ReasonDeliveryLimit is the dead-letter reason (HeaderDeadLetterReason) of
// a message the Source dead-lettered on its last delivery (Config.MaxDeliver):
// deliveries that were never settled, such as consumers that crashed on it.
const ReasonDeliveryLimit = "delivery-limit"

// natsHeaderPrefix starts the server's own headers (Nats-Msg-Id and
// friends), which copies never carry: a copy with the original's
// Nats-Msg-Id would be dropped by the stream's duplicate window.
const natsHeaderPrefix = "Nats-"

// CoordinateNumDelivered is the Message.Coordinates key of the server's
// delivery count of a redelivered message.
const CoordinateNumDelivered = "num-delivered"

// MessageFromMsg converts a JetStream message as the Source does: ID from the
// message-id header (else Nats-Msg-Id), Key from keyHeader, each header's
// first value, Attempt from the oncely-attempt header (at least 1), Offset
// the stream sequence, Timestamp the server's. Coordinates is nil on a
// first delivery and holds the server's delivery count ("num-delivered")
// on a redelivery: evidence of crashes and closes, never an attempt.
func MessageFromMsg(m jetstream.Msg, keyHeader string) *consumer.Message {
	msg := new(consumer.Message)
	fillMessage(msg, m, keyHeader)
	return msg
}

// fillMessage sets msg from m as MessageFromMsg describes and returns the
// server's delivery count of m (0 when m carries no JetStream metadata).
//
// Coordinates only on redeliveries: a map of the stream, sequence and
// count on every message cost N1 4 % (alternating runs, pooled medians
// 0.853 with it, 0.892 without; see docs/benchmarks-log.md, "NATS
// JetStream"); the stream is the Source's (StreamName), the sequence is
// Offset.
func fillMessage(msg *consumer.Message, m jetstream.Msg, keyHeader string) uint64 {
	h := stringHeaders(m.Headers())
	*msg = consumer.Message{
		ID:        h[consumer.HeaderMessageID],
		Key:       h[keyHeader],
		Body:      m.Data(),
		Headers:   h,
		Source:    m.Subject(),
		Attempt:   max(1, consumer.AttemptFromHeaders(h)),
		Partition: -1,
		Offset:    -1,
	}
	if msg.ID == "" {
		msg.ID = h[nats.MsgIdHdr]
	}
	md, err := m.Metadata()
	if err != nil {
		return 0
	}
	msg.Timestamp = md.Timestamp
	msg.Offset = int64(md.Sequence.Stream)
	if md.NumDelivered > 1 {
		msg.Coordinates = map[string]string{CoordinateNumDelivered: strconv.FormatUint(md.NumDelivered, 10)}
	}
	return md.NumDelivered
}

func stringHeaders(h nats.Header) map[string]string {
	if len(h) == 0 {
		return nil
	}
	out := make(map[string]string, len(h))
	for k, vs := range h {
		if len(vs) > 0 {
			out[k] = vs[0]
		}
	}
	return out
}

// outMsg is the NATS message for msg-like content: the headers given (minus
// the server's own), with message-id set to id and keyHeader to key when
// not empty.
func outMsg(subject, id, key, keyHeader string, body []byte, headers map[string]string) *nats.Msg {
	m := nats.NewMsg(subject)
	m.Data = body
	for k, v := range headers {
		if strings.HasPrefix(k, natsHeaderPrefix) {
			continue
		}
		m.Header[k] = []string{v}
	}
	if id != "" {
		m.Header[consumer.HeaderMessageID] = []string{id}
	}
	if key != "" {
		m.Header[keyHeader] = []string{key}
	}
	return m
}

// copySize is the size of a message's body and headers on the wire (the
// NATS/1.0 header block: "k: v\r\n" per header), for consumer.FitCopy.
func copySize(body []byte, headers map[string]string) int {
	n := len("NATS/1.0\r\n\r\n") + len(body)
	for k, v := range headers {
		n += len(k) + len(v) + 4
	}
	return n
}
