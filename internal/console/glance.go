package console

import (
	"fmt"
	"time"

	"github.com/oncely/oncely/consumer"
)

// ago is the age of t at now in words: "just now" under a minute, then
// whole minutes ("5 min ago"), hours ("3 h ago") and days ("2 days ago"),
// always rounded down; "-" for a zero t. A t after now (a clock ahead of
// the console's) is "just now".
func ago(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	switch d := now.Sub(t); {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%d min ago", int(d/time.Minute))
	case d < 24*time.Hour:
		return fmt.Sprintf("%d h ago", int(d/time.Hour))
	case d < 48*time.Hour:
		return "1 day ago"
	default:
		return fmt.Sprintf("%d days ago", int(d/(24*time.Hour)))
	}
}

// Reasons that adapters record besides consumer's: the broker's own
// delivery limit (RabbitMQ quorum queues, NATS JetStream MaxDeliver).
const reasonDeliveryLimit = "delivery-limit"

// nextSteps is, per dead-letter reason, the one thing to do first.
var nextSteps = map[string]string{
	consumer.ReasonExhausted:    "Every retry failed: fix the cause the error names (often a dependency), then redrive this group.",
	consumer.ReasonPermanent:    "The handler refused this message for good: fix the data or the handler, then redrive; or delete it if it is garbage.",
	consumer.ReasonMissingID:    "The producer sent no message ID: fix the producer to set one; a redrive fails again until the message carries an ID.",
	consumer.ReasonInvalidID:    "The message ID is not valid: fix the producer's IDs; a redrive fails again with the same ID.",
	consumer.ReasonPanic:        "The handler panicked: read the stack's first frame, fix the bug, deploy, then redrive.",
	consumer.ReasonRetryRefused: "The broker refused the retry copy (too large or delayed too long): shrink the message or raise the broker's limit, then redrive.",
	consumer.ReasonNoClaim:      "The handler returned without a claim: make it record its effect through the claim (or allow duplicates), then redrive.",
	reasonDeliveryLimit:         "The broker gave up after its delivery limit, no handler failure on record (crashes, lost connections): check the consumer's logs and restarts, then redrive.",
}

// nextStep is the next step for reason, or a generic one for a reason the
// console does not know.
func nextStep(reason string) string {
	if s, ok := nextSteps[reason]; ok {
		return s
	}
	return "Read the error and the headers to find the cause, fix it, then redrive."
}

// reasons are the dead-letter reasons the reason filter offers.
var reasons = []string{consumer.ReasonExhausted, consumer.ReasonPermanent, consumer.ReasonMissingID,
	consumer.ReasonInvalidID, consumer.ReasonPanic, consumer.ReasonRetryRefused, consumer.ReasonNoClaim, reasonDeliveryLimit}
