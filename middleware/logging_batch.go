package middleware

import (
	"context"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/oncely/oncely/consumer"
)

// loggingBatch is Logging around a BatchHandler: one line per batch call.
type loggingBatch struct {
	logger *slog.Logger
	next   consumer.BatchHandler
}

func (h *loggingBatch) Handle(ctx context.Context, msg *consumer.Message) error {
	return consumer.HandleOne(ctx, h, msg)
}

func (h *loggingBatch) HandleBatch(ctx context.Context, msgs []*consumer.Message) error {
	start := time.Now()
	err := recoverBatch(ctx, h.next, msgs)
	dur := time.Since(start)
	level, outcome, text := describe(ctx, err)
	be, partial := consumer.AsBatchError(err)
	if partial {
		level, outcome, text = slog.LevelWarn, "partial", "batch failed for some messages"
	} else if err == nil {
		text = "batch processed"
	}
	if !h.logger.Enabled(ctx, level) {
		return err
	}
	attrs := make([]slog.Attr, 0, 9)
	if name := consumer.NameFromContext(ctx); name != "" {
		attrs = append(attrs, slog.String("consumer", name))
	}
	attrs = append(attrs, slog.Int("batch_size", len(msgs)))
	if len(msgs) > 0 {
		attrs = append(attrs, slog.String("first_id", msgs[0].ID), slog.String("last_id", msgs[len(msgs)-1].ID))
	}
	attrs = append(attrs, slog.String("duration", dur.String()), slog.String("outcome", outcome))
	if partial {
		attrs = append(attrs, slog.Int("failed", len(be.Failed)))
	}
	if err != nil {
		attrs = append(attrs, slog.String("error", err.Error()))
	}
	h.logger.LogAttrs(ctx, level, text, attrs...)
	return err
}

// recoverBatch calls h, turning a panic into a *consumer.PanicError.
func recoverBatch(ctx context.Context, h consumer.BatchHandler, msgs []*consumer.Message) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &consumer.PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	return h.HandleBatch(ctx, msgs)
}
