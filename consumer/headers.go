package consumer

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// Header names set on retried and dead-lettered copies. Values are strings.
// The "original" headers are kept from the first hop; the error headers are
// replaced on every hop.
const (
	HeaderMessageID         = "message-id"
	HeaderPrefix            = "oncely-"
	HeaderAttempt           = "oncely-attempt"
	HeaderOriginalSource    = "oncely-original-source"
	HeaderOriginalPartition = "oncely-original-partition"
	HeaderOriginalOffset    = "oncely-original-offset"
	HeaderOriginalTimestamp = "oncely-original-timestamp"
	HeaderConsumer          = "oncely-consumer"
	HeaderError             = "oncely-error"
	HeaderErrorType         = "oncely-error-type"
	HeaderStack             = "oncely-stack"
	HeaderFirstFailedAt     = "oncely-first-failed-at"
	HeaderFailedAt          = "oncely-failed-at"
	HeaderRetryNotBefore    = "oncely-retry-not-before"
	HeaderDeadLetterReason  = "oncely-dead-letter-reason"
	HeaderTraceParent       = "traceparent"
	HeaderTraceState        = "tracestate"
	maxStackBytes           = 8 << 10
	maxErrorBytes           = 4 << 10
	timeLayout              = time.RFC3339Nano
)

// Dead-letter reasons, the value of HeaderDeadLetterReason.
const (
	ReasonExhausted = "exhausted"
	ReasonPermanent = "permanent"
	ReasonMissingID = "missing-id"
	ReasonInvalidID = "invalid-id"
	ReasonPanic     = "panic"
	// ReasonRetryRefused: the broker refused the retry copy for good (see
	// ErrCopyRefused) while it answered, so the message is dead-lettered
	// instead of looping.
	ReasonRetryRefused = "retry-refused"
	// ReasonNoClaim: the handler returned nil without passing through a
	// claim on a consumer that does not allow duplicates (see ErrNoClaim).
	ReasonNoClaim = "no-claim"
)

// Failure is the context of one failed attempt, turned into headers by
// FailureHeaders.
//
// For adapter authors (see the package doc).
type Failure struct {
	Consumer string
	Err      error
	// Reason is set for dead-lettering and empty for a retry.
	Reason string
	// NextAttempt is the attempt number the copy carries.
	NextAttempt int
	// NotBefore is when a retried copy is due; zero for dead-lettering.
	NotBefore time.Time
	// At is when the attempt failed.
	At time.Time
}

// FailureHeaders returns the headers for a retried or dead-lettered copy of msg:
// msg's own headers, the "original" headers kept from the first hop (or set from
// msg on the first hop), and the error headers of f replacing any earlier ones.
//
// For adapter authors (see the package doc).
func FailureHeaders(msg *Message, f Failure) map[string]string {
	h := maps.Clone(msg.Headers)
	if h == nil {
		h = make(map[string]string, 16)
	}
	setOnce := func(k, v string) {
		if _, ok := h[k]; !ok && v != "" {
			h[k] = v
		}
	}
	setOnce(HeaderOriginalSource, msg.Source)
	if msg.Partition >= 0 {
		setOnce(HeaderOriginalPartition, strconv.FormatInt(int64(msg.Partition), 10))
	}
	if msg.Offset >= 0 {
		setOnce(HeaderOriginalOffset, strconv.FormatInt(msg.Offset, 10))
	}
	if !msg.Timestamp.IsZero() {
		setOnce(HeaderOriginalTimestamp, msg.Timestamp.UTC().Format(timeLayout))
	}
	at := f.At
	if at.IsZero() {
		at = time.Now()
	}
	setOnce(HeaderFirstFailedAt, at.UTC().Format(timeLayout))
	h[HeaderMessageID] = msg.ID
	if msg.ID == "" {
		delete(h, HeaderMessageID)
	}
	h[HeaderConsumer] = f.Consumer
	h[HeaderAttempt] = strconv.Itoa(f.NextAttempt)
	h[HeaderFailedAt] = at.UTC().Format(timeLayout)
	delete(h, HeaderErrorType)
	delete(h, HeaderStack)
	delete(h, HeaderRetryNotBefore)
	delete(h, HeaderDeadLetterReason)
	if f.Err != nil {
		h[HeaderError] = truncate(f.Err.Error(), maxErrorBytes)
		if t := errorType(f.Err); t != "" {
			h[HeaderErrorType] = t
		}
		var pe *PanicError
		if errors.As(f.Err, &pe) && len(pe.Stack) > 0 {
			h[HeaderStack] = truncate(string(pe.Stack), maxStackBytes)
		}
	}
	if !f.NotBefore.IsZero() {
		h[HeaderRetryNotBefore] = f.NotBefore.UTC().Format(timeLayout)
	}
	if f.Reason != "" {
		h[HeaderDeadLetterReason] = f.Reason
	}
	return h
}

// AttemptFromHeaders returns the attempt number carried in HeaderAttempt, or 0
// when absent or malformed (a malformed header must not crash a consumer; the
// broker's own counter, if any, still applies).
//
// For adapter authors (see the package doc).
func AttemptFromHeaders(h map[string]string) int {
	v, ok := h[HeaderAttempt]
	if !ok {
		return 0 // the common first delivery: no error value to allocate
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// NotBeforeFromHeaders returns HeaderRetryNotBefore, or zero when absent or
// malformed.
//
// For adapter authors (see the package doc).
func NotBeforeFromHeaders(h map[string]string) time.Time {
	v, ok := h[HeaderRetryNotBefore]
	if !ok {
		return time.Time{} // the common first delivery: no parse error to allocate
	}
	t, err := time.Parse(timeLayout, v)
	if err != nil {
		return time.Time{}
	}
	return t
}

// Types of the standard library's plain errors: errors.New's leaf and the
// wrappers of fmt.Errorf (one or several %w) and errors.Join. They say
// nothing about the failure, so errorType looks past them.
var plainErrorTypes = map[reflect.Type]bool{
	reflect.TypeOf(errors.New("")):                                     true,
	reflect.TypeOf(fmt.Errorf("%w", errors.New(""))):                   true,
	reflect.TypeOf(fmt.Errorf("%w%w", errors.New(""), errors.New(""))): true,
	reflect.TypeOf(errors.Join(errors.New(""))):                        true,
}

// errorType is HeaderErrorType's value for err: the first type in err's
// chain (depth first, as errors.As walks it) that is neither oncely's
// wrapper (PermanentError, RetryAfterError, UnavailableError) nor a plain
// standard-library error, such as *myapp.DecodeError; "panic" for a
// PanicError; empty when the chain holds no other type (a plain errors.New,
// however wrapped).
func errorType(err error) string {
	switch err.(type) {
	case nil:
		return ""
	case *PanicError:
		return "panic"
	case *PermanentError, *RetryAfterError, *UnavailableError:
	default:
		if t := reflect.TypeOf(err); !plainErrorTypes[t] {
			return t.String()
		}
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		return errorType(u.Unwrap())
	case interface{ Unwrap() []error }:
		for _, inner := range u.Unwrap() {
			if t := errorType(inner); t != "" {
				return t
			}
		}
	}
	return ""
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const marker = "…[truncated]"
	cut := n - len(marker)
	for cut > 0 && !utf8Start(s[cut]) {
		cut--
	}
	return s[:cut] + marker
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }
