package sqs

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/oncely/oncely/internal/names"
)

// maxQueueName is SQS's limit on a queue name's length, ".fifo" included.
const maxQueueName = 80

// ErrNameTooLong is wrapped by DeadLetterQueueName's error for a (queue,
// consumer) pair whose dead-letter queue name would exceed SQS's 80
// characters.
var ErrNameTooLong = errors.New("derived queue name too long")

// DeadLetterQueueName derives the default dead-letter queue name for queue
// and consumer: "<queue>-<consumer>-dlq" for a consumer of letters, digits
// and '_'; for any other consumer "<queue>-<escaped consumer>--dlq", every
// byte other than a letter or digit written as '_' and two hex digits
// ("ledger-eu" is "ledger_2deu"); plus ".fifo" for a FIFO queue, whose
// dead-letter queue must be FIFO too. The part before "dlq" is empty only
// for an escaped consumer, and neither form of the consumer holds '-', so
// no two (queue, consumer) pairs share a name. A name over SQS's 80
// characters is refused (ErrNameTooLong): set Config.DeadLetterQueueName
// (the URL's dlq parameter) instead.
func DeadLetterQueueName(queue, consumer string) (string, error) {
	base, fifo := strings.CutSuffix(queue, ".fifo")
	suffix := "dlq"
	if fifo {
		suffix += ".fifo"
	}
	name := base + "-" + consumer + "-" + suffix
	if !plainConsumer(consumer) {
		name = base + "-" + names.Escape(consumer, '_', names.Alnum) + "--" + suffix
	}
	if len(name) > maxQueueName {
		return "", fmt.Errorf("%w: the dead-letter queue of queue %q and consumer %q would be %q, %d characters, over SQS's %d; "+
			"set the dead-letter queue's name (Config.DeadLetterQueueName, the URL's dlq parameter) to one of your own, "+
			"or to %q, the name earlier versions derived, to keep using that queue",
			ErrNameTooLong, queue, consumer, name, len(name), maxQueueName, hashedDeadLetterQueueName(base, consumer, fifo))
	}
	return name, nil
}

// DeadLetterQueuePrefix is what every dead-letter queue name that
// DeadLetterQueueName derives for queue begins with: "<queue>-", ".fifo"
// left out.
func DeadLetterQueuePrefix(queue string) string {
	base, _ := strings.CutSuffix(queue, ".fifo")
	return base + "-"
}

// DeadLetterQueueConsumer is the inverse of DeadLetterQueueName for a known
// queue: the consumer whose dead-letter queue of queue is name, and false
// for any other name (a queue named with Config.DeadLetterQueueName, or the
// hashed name of earlier versions, cannot be read back).
func DeadLetterQueueConsumer(queue, name string) (string, bool) {
	base, fifo := strings.CutSuffix(queue, ".fifo")
	suffix := "-dlq"
	if fifo {
		suffix += ".fifo"
	}
	rest, ok := strings.CutPrefix(name, base+"-")
	if !ok {
		return "", false
	}
	consumer, ok := strings.CutSuffix(rest, suffix)
	if !ok || consumer == "" {
		return "", false
	}
	if escaped, ok := strings.CutSuffix(consumer, "-"); ok {
		var err error
		if consumer, err = names.Unescape(escaped, '_'); err != nil {
			return "", false
		}
	}
	if derived, err := DeadLetterQueueName(queue, consumer); err != nil || derived != name {
		return "", false
	}
	return consumer, true
}

// plainConsumer reports whether consumer keeps the dead-letter queue name
// of earlier versions: letters, digits and '_' only.
func plainConsumer(consumer string) bool {
	for i := 0; i < len(consumer); i++ {
		if !names.Alnum(consumer[i]) && consumer[i] != '_' {
			return false
		}
	}
	return true
}

// hashedDeadLetterQueueName is the name earlier versions derived for a
// dead-letter queue name too long for SQS: "<queue>-<consumer>" with other
// characters than letters, digits, '-' and '_' replaced by '-', cut, and a
// hash of the names inserted before "-dlq". DeadLetterQueueName's error
// names it, so that a deployment can keep its queue.
func hashedDeadLetterQueueName(base, consumer string, fifo bool) string {
	clean := func(s string) string {
		return strings.Map(func(r rune) rune {
			if r == '_' || r < 0x80 && names.Alnum(byte(r)) {
				return r
			}
			return '-'
		}, s)
	}
	queue, suffix := base, "-dlq"
	if fifo {
		queue, suffix = base+".fifo", suffix+".fifo"
	}
	name := clean(base) + "-" + clean(consumer)
	if len(name)+len(suffix) <= maxQueueName {
		return name + suffix
	}
	sum := sha256.Sum256([]byte(queue + "\x00" + consumer))
	hash := "-" + hex.EncodeToString(sum[:])[:12]
	return name[:maxQueueName-len(hash)-len(suffix)] + hash + suffix
}
