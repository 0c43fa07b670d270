// Package middleware holds the standard handler middleware of oncely. Every
// middleware has the one shape consumer.Middleware, func(consumer.Handler)
// consumer.Handler, and is passed to consumer.New (the first one outermost):
//
//	c, err := consumer.New(src, handler, cfg,
//		middleware.Logging(logger),         // one line per delivery attempt
//		middleware.Retry(inProcessPolicy),  // short retries within the broker lease
//		middleware.Timeout(5*time.Second),  // per try
//		middleware.Idempotency(claims),     // claim + effects in one unit of work, per try
//	)
//
// Idempotency belongs inside Retry and Timeout, so that every try gets its own
// claim and transaction and a timed-out try releases its claim. Put Logging
// inside Retry instead to log every in-process try rather than every delivery.
//
// There is no Recover middleware here: consumer.Recover turns panics into
// *consumer.PanicError values, and the Consumer always installs it outermost.
// Retry and Logging also recover panics of the handlers they wrap (with
// consumer.Recover), so that a panic counts as a failed try and is logged.
//
// The runtime settles each delivery after the chain returns: nil acks it, and
// an error is retried on the broker or dead-lettered according to its class
// (see consumer.Classify). Middleware here never swallows an error.
package middleware
