package consumer

import (
	"context"
	"time"
)

// Outcome is how one attempt of a delivery ended.
type Outcome string

// Outcomes reported to an Observer.
const (
	// OutcomeProcessed: the handler succeeded and the delivery was acked.
	OutcomeProcessed Outcome = "processed"
	// OutcomeDuplicate: the message was already processed; acked without
	// running the handler.
	OutcomeDuplicate Outcome = "duplicate"
	// OutcomeRetried: a retry copy was published and the original acked.
	OutcomeRetried Outcome = "retried"
	// OutcomeDeadLettered: a dead-letter copy was published and the original
	// acked.
	OutcomeDeadLettered Outcome = "dead_lettered"
	// OutcomeFailed: the attempt failed with an outage, or settlement failed;
	// the delivery is held unsettled and tried again.
	OutcomeFailed Outcome = "failed"
	// OutcomeAbandoned: the consumer hard-stopped or the lease was lost; the
	// delivery was left unsettled for the broker to redeliver.
	OutcomeAbandoned Outcome = "abandoned"
)

// Event describes one settled (or abandoned) attempt.
type Event struct {
	Consumer string
	Message  *Message
	Outcome  Outcome
	// Err is the handler's or settlement's error, nil when processed.
	Err error
	// Reason is the dead-letter reason for OutcomeDeadLettered.
	Reason string
	// RetryAfter is the delay for OutcomeRetried.
	RetryAfter time.Duration
	// Duration is how long the handler chain ran (zero when it did not run).
	Duration time.Duration
	// Trimmed reports, for OutcomeRetried and OutcomeDeadLettered, that the
	// adapter trimmed the copy to fit the broker's size limit (see FitCopy).
	Trimmed bool
}

// Observer receives the runtime's events, for metrics and tests. Methods are
// called from worker goroutines and must not block.
type Observer interface {
	// Settled is called once per attempt outcome.
	Settled(ctx context.Context, ev Event)
	// BreakerChanged is called when intake pauses (open) or resumes.
	BreakerChanged(open bool)
}
