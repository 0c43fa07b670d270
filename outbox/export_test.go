package outbox

import "context"

// SetAfterPublish makes f run in each round after Publish returned and
// before the rows are marked, with the round's backend PID.
func (r *Relay) SetAfterPublish(f func(ctx context.Context, pid uint32)) {
	r.hooks.afterPublish = f
}

// SetListening makes f run each time the LISTEN connection is listening.
func (r *Relay) SetListening(f func()) { r.hooks.listening = f }

// SendLockKey is the string whose hashtextextended(·, 0) is the advisory
// lock Send and SendBatch take for (destination, key) in schema.
var SendLockKey = sendLockKey

// SetRoundEnded makes f run after each round with how many rows it claimed
// and its error.
func (r *Relay) SetRoundEnded(f func(n int, err error)) { r.hooks.roundEnded = f }

// SetAfterWindow makes f run in each round that found unpublished rows,
// after it read its window and before it takes locks.
func (r *Relay) SetAfterWindow(f func(ctx context.Context)) { r.hooks.afterWindow = f }
