package memory

import (
	"cmp"
	"slices"

	"github.com/oncely/oncely/consumer"
)

// deadLetters is the dead-letter queue of one (source, consumer name).
type deadLetters struct {
	msgs []*consumer.Message // oldest first; Offset numbers them
	next int64               // the Offset of the next dead letter
}

// RemoveDeadLetter removes the dead letter at offset (its Offset as listed by
// DeadLetters) from the dead-letter queue of (source, consumerName) and
// reports whether it was there. Redrive tooling calls it after the message was
// published back to its source: it removes exactly the copy it republished,
// never a later dead letter of the same message ID (one written when the
// republished copy failed again).
func (b *Broker) RemoveDeadLetter(source, consumerName string, offset int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	dl := b.dlq[dlqKey{source, consumerName}]
	if dl == nil {
		return false
	}
	// Offsets increase along msgs, so the one to remove is found by search.
	i, ok := slices.BinarySearchFunc(dl.msgs, offset, func(m *consumer.Message, o int64) int { return cmp.Compare(m.Offset, o) })
	if !ok {
		return false
	}
	dl.msgs = slices.Delete(dl.msgs, i, i+1)
	return true
}
