package nats

import (
	"errors"
	"fmt"
	"maps"
	"strconv"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/oncely/oncely/consumer"
)

// Backoff of the dead-letter copy of a message at its delivery limit.
const (
	limitRetryFirst = 100 * time.Millisecond
	limitRetryMax   = 5 * time.Second
)

// deadLetterLimit dead-letters d, delivered n times (at least
// Config.MaxDeliver), with reason ReasonDeliveryLimit. A refused or failed
// copy is tried again, with exponential backoff (limitRetryFirst to
// limitRetryMax), until it is confirmed or the Source closes; meanwhile d
// stays held, its lease renewed. The original is acked only after the
// copy's PubAck. A delivery not dead-lettered when the Source closes is
// nak'd by Close (a crashed process leaves it to expire after AckWait), and
// the server, which has no delivery limit of its own (see ensureConsumer),
// delivers it again: the Source that gets it dead-letters it then.
func (src *Source) deadLetterLimit(d *delivery, n uint64) {
	h := limitHeaders(d, n, src.cfg)
	src.log.Warn("message reached its delivery limit; dead-lettering it", "message_id", d.msg.ID, "num_delivered", n)
	b := backoff.NewExponentialBackOff(backoff.WithInitialInterval(limitRetryFirst),
		backoff.WithMaxInterval(limitRetryMax), backoff.WithMaxElapsedTime(0))
	err := backoff.RetryNotify(func() error {
		err := d.DeadLetter(src.life, h)
		if errors.Is(err, ErrReleased) || errors.Is(err, consumer.ErrAlreadySettled) {
			return backoff.Permanent(err)
		}
		return err
	}, backoff.WithContext(b, src.life), func(err error, wait time.Duration) {
		src.log.Warn("dead-lettering a message at its delivery limit failed; trying again", "message_id", d.msg.ID, "retry_in", wait.String(), "error", err)
	})
	if err != nil {
		src.log.Info("a message at its delivery limit was not dead-lettered before Close; the server delivers it again", "message_id", d.msg.ID, "error", err)
	}
}

// limitHeaders are the headers of d's dead-letter copy at its delivery
// limit: its own, with oncely's failure headers.
func limitHeaders(d *delivery, n uint64, cfg Config) map[string]string {
	now := time.Now().UTC().Format(time.RFC3339Nano)
	h := maps.Clone(d.msg.Headers)
	if h == nil {
		h = map[string]string{}
	}
	h[consumer.HeaderDeadLetterReason] = ReasonDeliveryLimit
	h[consumer.HeaderError] = fmt.Sprintf("delivered %d times without being settled (MaxDeliver %d): consumers crashed or lost their lease on it", n, cfg.MaxDeliver)
	h[consumer.HeaderConsumer] = cfg.Consumer
	h[consumer.HeaderAttempt] = strconv.Itoa(d.msg.Attempt)
	h[consumer.HeaderFailedAt] = now
	if _, ok := h[consumer.HeaderOriginalSource]; !ok {
		h[consumer.HeaderOriginalSource] = d.msg.Source
	}
	if _, ok := h[consumer.HeaderFirstFailedAt]; !ok {
		h[consumer.HeaderFirstFailedAt] = now
	}
	return h
}
