package adapters

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ErrNoConsumer is matched (errors.Is) by the *NoConsumerError that
// Broker.DeadLetters, Redrive, Purge and Backlog return when the source
// exists but the consumer name never consumed it, so that a mistyped
// consumer name is an error rather than an empty dead-letter destination.
// They create nothing.
var ErrNoConsumer = errors.New("consumer does not exist")

// ErrConsumersUnlisted is returned (wrapped) by Broker.Consumers on a broker
// that cannot list the consumer names of a source (RabbitMQ over AMQP).
var ErrConsumersUnlisted = errors.New("the broker cannot list consumer names")

// NoConsumerError is the error of a consumer name that never consumed an
// existing source. It matches ErrNoConsumer.
type NoConsumerError struct {
	// Source and Consumer are the names asked for.
	Source, Consumer string
	// Known are the consumer names that exist for Source, sorted; empty
	// when none does or, with Listed false, when the broker cannot list
	// them.
	Known []string
	// Listed reports whether Known was read from the broker.
	Listed bool
}

func (e *NoConsumerError) Error() string {
	msg := fmt.Sprintf("consumer %q does not exist on source %q: no Source of that name ever read it", e.Consumer, e.Source)
	switch {
	case !e.Listed:
		return msg + " (the consumer names that exist cannot be listed: RabbitMQ has no queue listing over AMQP; the management UI shows the queues <source>.<consumer>.dlq)"
	case len(e.Known) == 0:
		return msg + "; the source has no consumer yet"
	}
	quoted := make([]string, len(e.Known))
	for i, k := range e.Known {
		quoted[i] = fmt.Sprintf("%q", k)
	}
	return msg + "; its consumers are " + strings.Join(quoted, ", ")
}

// Is reports whether target is ErrNoConsumer.
func (e *NoConsumerError) Is(target error) bool { return target == ErrNoConsumer }

// consumerIndex is what a broker knows of the consumer names of a source.
type consumerIndex interface {
	// hasConsumer reports whether consumerName has consumed source (or
	// opened a Source on it).
	hasConsumer(ctx context.Context, source, consumerName string) (bool, error)
	// Consumers is Broker.Consumers.
	Consumers(ctx context.Context, source string) ([]string, error)
}

// checkConsumer is nil when consumerName exists for source, a
// *NoConsumerError naming the consumers that do when not.
func checkConsumer(ctx context.Context, b consumerIndex, source, consumerName string) error {
	ok, err := b.hasConsumer(ctx, source, consumerName)
	if errors.Is(err, ErrNoSource) {
		return err
	}
	if err != nil {
		return fmt.Errorf("looking up consumer %q of %s: %w", consumerName, source, err)
	}
	if ok {
		return nil
	}
	e := &NoConsumerError{Source: source, Consumer: consumerName}
	known, err := b.Consumers(ctx, source)
	switch {
	case errors.Is(err, ErrConsumersUnlisted):
	case err != nil:
		return fmt.Errorf("%w (listing the consumers that exist failed: %w)", e, err)
	default:
		e.Known, e.Listed = sortedUnique(known), true
	}
	return e
}

// sortedUnique returns names sorted, without repeats and never nil.
func sortedUnique(names []string) []string {
	out := slices.Clone(names)
	slices.Sort(out)
	return append([]string{}, slices.Compact(out)...)
}
