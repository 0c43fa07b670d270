package middleware

import (
	"context"

	"github.com/oncely/oncely/consumer"
	"github.com/oncely/oncely/store"
)

// idempotentBatch is Idempotency around a BatchHandler: one
// store.BatchStore claim per batch.
type idempotentBatch struct {
	s    store.BatchStore
	next consumer.BatchHandler
}

// Handle runs a batch of msg alone.
func (h *idempotentBatch) Handle(ctx context.Context, msg *consumer.Message) error {
	return consumer.HandleOne(ctx, h, msg)
}

// HandleBatch claims msgs at once and runs the wrapped handler on those
// processed for the first time.
func (h *idempotentBatch) HandleBatch(ctx context.Context, msgs []*consumer.Message) error {
	name := consumer.NameFromContext(ctx)
	if name == "" {
		return ErrNoConsumerName
	}
	ids := make([]string, len(msgs))
	var missing map[int]error
	for i, m := range msgs {
		if ids[i] = m.ID; m.ID == "" {
			if missing == nil {
				missing = map[int]error{}
			}
			missing[i] = consumer.Permanent(ErrNoMessageID)
		}
	}
	if missing != nil {
		return consumer.BatchError{Failed: missing}
	}
	fresh, err := h.s.ProcessBatch(ctx, name, ids, func(ctx context.Context, fresh []int) error {
		sub := msgs
		if len(fresh) < len(msgs) {
			sub = make([]*consumer.Message, len(fresh))
			for n, i := range fresh {
				sub[n] = msgs[i]
			}
		}
		err := h.next.HandleBatch(ctx, sub)
		if be, ok := consumer.AsBatchError(err); ok && len(sub) < len(msgs) {
			return remap(be, fresh, len(sub))
		}
		return err
	})
	if err != nil {
		return err
	}
	consumer.MarkClaimed(ctx)
	if len(fresh) < len(msgs) {
		dups := make([]*consumer.Message, 0, len(msgs)-len(fresh))
		n := 0
		for i, m := range msgs {
			if n < len(fresh) && fresh[n] == i {
				n++
				continue
			}
			dups = append(dups, m)
		}
		consumer.MarkDuplicates(ctx, dups...)
	}
	return nil
}

// remap returns be with the positions of sub (sub[n] is msgs[fresh[n]])
// turned into msgs' positions. A position outside sub is kept out of range,
// so the runtime treats the error as the whole batch's, as it would have.
func remap(be consumer.BatchError, fresh []int, n int) consumer.BatchError {
	out := make(map[int]error, len(be.Failed))
	for i, err := range be.Failed {
		if i < 0 || i >= n {
			out[-1] = err
			continue
		}
		out[fresh[i]] = err
	}
	return consumer.BatchError{Failed: out}
}
