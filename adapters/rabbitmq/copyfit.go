package rabbitmq

import (
	"fmt"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/oncely/oncely/consumer"
)

// propertySlack bounds the encoded size of a content-header frame beyond
// its headers table: the frame's own fields and the other basic properties
// (short strings of at most 255 bytes each).
const propertySlack = 4 << 10

// tableSize is the encoded size of the headers table publishHeaders makes
// of h (string values, the broker's own headers left out).
func tableSize(h map[string]string) int {
	n := 4
	for k, v := range h {
		if !brokerHeaders[k] {
			n += 1 + len(k) + 1 + 4 + len(v)
		}
	}
	return n
}

// fit makes the copy p (properties and body) with headers h fit the broker's
// limits before it is published, as consumer.FitCopy does:
//
//   - the headers, with the other properties, within the connection's
//     negotiated frame size (AMQP sends them in one content-header frame,
//     and RabbitMQ closes the connection over a frame over frame_max);
//   - body plus headers within MaxMessageSize (RabbitMQ closes the channel
//     of a publish over max_message_size, which counts the body; the headers
//     are counted too, to stay on the safe side).
//
// removeBody allows a dead-letter copy to lose its body. A copy that cannot
// fit is an error wrapping consumer.ErrCopyRefused. trimmed reports that
// the copy was changed; every change is logged.
func (d *delivery) fit(what string, p amqp.Publishing, h map[string]string, removeBody bool) (_ amqp.Publishing, trimmed bool, err error) {
	frame := 0
	if fs := d.sess.conn.Config.FrameSize; fs > propertySlack {
		frame = fs - propertySlack
	}
	headerSize := func(_ []byte, h map[string]string) int { return tableSize(h) }
	hf, err := consumer.FitCopy(p.Body, h, frame, headerSize, removeBody, d.src.cfg.KeyHeader)
	if err != nil {
		return p, false, fmt.Errorf("%s copy's headers do not fit the %d-byte frame: %w", what, frame, err)
	}
	limit := d.src.cfg.MaxMessageSize
	bf, err := consumer.FitCopy(hf.Body, hf.Headers, limit, func(b []byte, h map[string]string) int { return len(b) + tableSize(h) }, removeBody, d.src.cfg.KeyHeader)
	if err != nil {
		return p, false, fmt.Errorf("%s copy does not fit MaxMessageSize %d: %w", what, limit, err)
	}
	if frame > 0 && tableSize(bf.Headers) > frame { // the body-removed markers made the headers too large
		return p, false, fmt.Errorf("%s copy's headers do not fit the %d-byte frame: %w", what, frame, consumer.ErrCopyRefused)
	}
	trimmed = hf.Trimmed || bf.Trimmed || bf.BodyRemoved
	if trimmed {
		d.src.log.Warn("copy trimmed to fit the broker's limits", "message_id", d.msg.ID, "copy", what,
			"body_removed", bf.BodyRemoved, "headers_removed", append(hf.HeadersRemoved, bf.HeadersRemoved...), "body_bytes", len(p.Body), "max_message_size", limit, "frame_size", frame)
	}
	p.Body = bf.Body
	p.Headers = publishHeaders(bf.Headers)
	return p, trimmed, nil
}

// ReasonDeliveryLimit is the dead-letter reason reported (HeaderDeadLetterReason)
// for a message the broker dead-lettered itself, past the source queue's
// x-delivery-limit: it was returned unacknowledged that many times, by
// crashes, lost connections or clean closes, and no handler failure is on
// record.
const ReasonDeliveryLimit = "delivery-limit"

// nameBrokerDeadLetter gives a message the broker dead-lettered past its
// delivery limit (the latest x-death entry says delivery_limit, and no
// oncely reason is set) its failure context: reason ReasonDeliveryLimit, an
// error naming the queue and count, and the time.
func nameBrokerDeadLetter(t amqp.Table, h map[string]string) {
	if h[consumer.HeaderDeadLetterReason] != "" {
		return
	}
	deaths, ok := t["x-death"].([]any)
	if !ok || len(deaths) == 0 {
		return
	}
	last, ok := deaths[0].(amqp.Table) // the latest death comes first
	if !ok || last["reason"] != "delivery_limit" {
		return
	}
	h[consumer.HeaderDeadLetterReason] = ReasonDeliveryLimit
	h[consumer.HeaderError] = fmt.Sprintf("RabbitMQ dead-lettered the message from queue %s past its x-delivery-limit: "+
		"it was returned unacknowledged that many times (crashes, lost connections or clean closes); no handler failure is on record", headerString(last["queue"]))
	if at, ok := last["time"].(time.Time); ok && h[consumer.HeaderFailedAt] == "" {
		h[consumer.HeaderFailedAt] = at.UTC().Format(time.RFC3339Nano)
	}
}
