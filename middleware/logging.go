package middleware

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/oncely/oncely/consumer"
)

// Logging writes one structured line per call of the wrapped handler, after
// it returns, with the attributes consumer (when known), message_id, source,
// attempt (the delivery attempt), try (the in-process try, inside Retry),
// duration and outcome, plus error for failures. Levels:
//
//   - Info: outcome "processed", or "duplicate" (the idempotency store had
//     already recorded the message);
//   - Warn: outcome "retryable", "outage" (a consumer.Unavailable error) or
//     "cancelled" (the context ended: hard stop, lost lease);
//   - Error: outcome "permanent" (a consumer.Permanent error) or "panic".
//
// Panics of the wrapped handler are recovered with consumer.Recover, logged
// and returned as *consumer.PanicError. When the logger is not enabled for a
// line's level nothing is formatted. A nil logger means slog.Default().
//
// Around a consumer.BatchHandler, Logging returns one that writes one line
// per batch call: consumer, batch_size, first_id and last_id (the batch's
// first and last message IDs), duration and outcome, with the levels
// above; a consumer.BatchError is outcome "partial" (Warn) with
// failed, the number of messages it names.
func Logging(logger *slog.Logger) consumer.Middleware {
	if logger == nil {
		logger = slog.Default()
	}
	return func(next consumer.Handler) consumer.Handler {
		if bnext, ok := next.(consumer.BatchHandler); ok {
			return &loggingBatch{logger: logger, next: bnext}
		}
		next = consumer.Recover(next)
		return consumer.HandlerFunc(func(ctx context.Context, msg *consumer.Message) error {
			start := time.Now()
			err := next.Handle(ctx, msg)
			dur := time.Since(start)
			level, outcome, text := describe(ctx, err)
			if !logger.Enabled(ctx, level) {
				return err
			}
			attrs := make([]slog.Attr, 0, 8)
			if name := consumer.NameFromContext(ctx); name != "" {
				attrs = append(attrs, slog.String("consumer", name))
			}
			attrs = append(attrs,
				slog.String("message_id", msg.ID),
				slog.String("source", msg.Source),
				slog.Int("attempt", msg.Attempt),
			)
			if try := tryFromContext(ctx); try > 0 {
				attrs = append(attrs, slog.Int("try", try))
			}
			attrs = append(attrs, slog.String("duration", dur.String()), slog.String("outcome", outcome))
			if err != nil {
				attrs = append(attrs, slog.String("error", err.Error()))
			}
			logger.LogAttrs(ctx, level, text, attrs...)
			return err
		})
	}
}

// describe maps an attempt's result to a level, an outcome and a message.
func describe(ctx context.Context, err error) (slog.Level, string, string) {
	if err == nil {
		if consumer.IsDuplicate(ctx) {
			return slog.LevelInfo, "duplicate", "duplicate message skipped"
		}
		return slog.LevelInfo, "processed", "message processed"
	}
	var pe *consumer.PanicError
	switch {
	case errors.As(err, &pe):
		return slog.LevelError, "panic", "handler panicked"
	case ctx.Err() != nil:
		return slog.LevelWarn, "cancelled", "handler cancelled"
	}
	switch consumer.Classify(err) {
	case consumer.ClassPermanent:
		return slog.LevelError, "permanent", "message failed permanently"
	case consumer.ClassUnavailable:
		return slog.LevelWarn, "outage", "dependency unavailable"
	default:
		return slog.LevelWarn, "retryable", "message failed"
	}
}
