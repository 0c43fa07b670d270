package memory

// RemoveDeadLetters removes every copy of message id from the dead-letter
// queue of (source, consumerName) and returns how many it removed. Redrive
// tooling calls it after the message was published back to its source.
func (b *Broker) RemoveDeadLetters(source, consumerName, id string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	k := dlqKey{source, consumerName}
	kept := b.dlq[k][:0]
	n := 0
	for _, m := range b.dlq[k] {
		if m.ID == id {
			n++
			continue
		}
		kept = append(kept, m)
	}
	clear(b.dlq[k][len(kept):])
	b.dlq[k] = kept
	return n
}
