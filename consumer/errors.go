package consumer

import (
	"errors"
	"fmt"
	"time"
)

// ErrSourceClosed is returned by Source.Receive after Source.Close.
var ErrSourceClosed = errors.New("oncely: source closed")

// ErrAlreadySettled is returned by a Delivery settled a second time.
var ErrAlreadySettled = errors.New("oncely: delivery already settled")

// PermanentError marks a failure that no retry can fix: the message goes to the
// dead-letter destination at once with reason "permanent".
type PermanentError struct{ Err error }

func (e *PermanentError) Error() string { return "permanent: " + errString(e.Err) }
func (e *PermanentError) Unwrap() error { return e.Err }

// Permanent wraps err so the runtime dead-letters the message without retrying.
// Decode and validation failures should be returned this way. Permanent(nil)
// returns nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &PermanentError{Err: err}
}

// RetryAfterError asks for a retry no sooner than After. It still counts as an
// attempt; when attempts are exhausted the message is dead-lettered.
type RetryAfterError struct {
	Err   error
	After time.Duration
}

func (e *RetryAfterError) Error() string {
	return fmt.Sprintf("retry after %s: %s", e.After, errString(e.Err))
}
func (e *RetryAfterError) Unwrap() error { return e.Err }

// RetryAfter wraps err so the next attempt happens no sooner than d (the policy's
// backoff is used when it is longer).
func RetryAfter(err error, d time.Duration) error {
	if err == nil {
		err = errors.New("retry requested")
	}
	return &RetryAfterError{Err: err, After: d}
}

// UnavailableError marks an infrastructure failure (a database or a downstream
// service that does not answer).
//
// With a Dependency, the runtime probes it (see Prober): when the dependency
// is down the failure is an outage, and when it answers the failure is this
// message's and is retried like any other (so a message the database rejects,
// or a handler whose connection the server killed, ends in the dead-letter
// destination instead of being held forever). Without a Dependency the error
// is taken at its word: an outage. During an outage the runtime holds the
// delivery unsettled, counts the failure towards the breaker and tries the
// same message again after a backoff, instead of retrying it on the broker or
// dead-lettering it.
type UnavailableError struct {
	Err error
	// Dependency is what failed, probed by the runtime before it calls the
	// failure an outage. Nil: the failure is an outage without a probe.
	Dependency Prober
	// Down reports that Err itself shows Dependency was down (it refused or
	// could not open a connection: no message can cause that). The failure
	// is an outage whatever a later probe says — a dependency coming back
	// between the failure and the probe does not make it the message's — and
	// Dependency is probed only to learn when the outage is over. Set by
	// DownFrom.
	Down bool
}

func (e *UnavailableError) Error() string { return "unavailable: " + errString(e.Err) }
func (e *UnavailableError) Unwrap() error { return e.Err }

// Unavailable wraps err to mark it as an infrastructure outage, without a
// dependency to probe. Unavailable(nil) returns nil.
func Unavailable(err error) error {
	if err == nil {
		return nil
	}
	return &UnavailableError{Err: err}
}

// UnavailableFrom wraps err as a failure of dep: the runtime probes dep and
// treats err as an outage only when dep does not answer. Stores wrap their
// own failures this way. UnavailableFrom(nil, dep) returns nil.
func UnavailableFrom(err error, dep Prober) error {
	if err == nil {
		return nil
	}
	return &UnavailableError{Err: err, Dependency: dep}
}

// DownFrom wraps err as a failure that shows dep was down, such as a refused
// connection: an outage without the probe's say, whose end the runtime
// learns by probing dep (see UnavailableError.Down). DownFrom(nil, dep)
// returns nil.
func DownFrom(err error, dep Prober) error {
	if err == nil {
		return nil
	}
	return &UnavailableError{Err: err, Dependency: dep, Down: true}
}

// ErrCopyRefused is wrapped by Delivery.Retry and Delivery.DeadLetter when the
// broker refuses the copy for good (larger than the broker or topic allows
// even after trimming, a delay beyond its limit): trying the same publish
// again cannot succeed. The runtime dead-letters a message whose retry copy
// was refused, with reason ReasonRetryRefused.
var ErrCopyRefused = errors.New("oncely: the broker refuses this copy")

// PanicError is a recovered panic. Its message dead-letters with reason "panic"
// once attempts are exhausted; until then it is retried like any failure.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v", e.Value) }

// Class is how a failure is settled. The classes are named after the
// wrappers that mark them: Permanent, Unavailable, and anything else.
type Class int

const (
	// ClassRetryable failures are retried with the policy's backoff until
	// attempts run out, then dead-lettered with reason "exhausted". The
	// default.
	ClassRetryable Class = iota
	// ClassPermanent failures (see Permanent) are dead-lettered at once
	// with reason "permanent".
	ClassPermanent
	// ClassUnavailable failures (see Unavailable) are a dependency's: when
	// the dependency does not answer its probe, the delivery is held as an
	// outage and the failure counts towards the breaker; when it answers,
	// the failure is retried as ClassRetryable.
	ClassUnavailable
)

// String returns the name logs and traces give the class's settlement:
// "retryable", "permanent" or "outage".
func (c Class) String() string {
	switch c {
	case ClassPermanent:
		return "permanent"
	case ClassUnavailable:
		return "outage"
	default:
		return "retryable"
	}
}

// Classify reports how err is settled, looking through wrapping with errors.As.
// PermanentError is ClassPermanent, UnavailableError is ClassUnavailable,
// anything else ClassRetryable. When an error wraps both, the outermost
// marker wins.
func Classify(err error) Class {
	for e := err; e != nil; {
		switch e.(type) {
		case *PermanentError:
			return ClassPermanent
		case *UnavailableError:
			return ClassUnavailable
		}
		switch u := e.(type) {
		case interface{ Unwrap() error }:
			e = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, inner := range u.Unwrap() {
				if c := Classify(inner); c != ClassRetryable {
					return c
				}
			}
			return ClassRetryable
		default:
			return ClassRetryable
		}
	}
	return ClassRetryable
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}
