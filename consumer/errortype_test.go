package consumer_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/oncely/oncely/consumer"
)

// decodeError is a user's own error type.
type decodeError struct{ field string }

func (e *decodeError) Error() string { return "cannot decode " + e.field }

// TestErrorTypeIsTheUsers checks HeaderErrorType on a dead letter: the
// first type in the chain that is neither oncely's wrapper nor a plain
// standard-library error, and no header when the chain has none. The bug it
// catches: recording *errors.errorString, *fmt.wrapError or
// *consumer.PermanentError, which tell the operator nothing.
func TestErrorTypeIsTheUsers(t *testing.T) {
	plain := errors.New("order not found")
	custom := &decodeError{field: "amount"}
	cases := []struct {
		name string
		err  error
		want string
	}{
		{"errors.New", plain, ""},
		{"fmt.Errorf without %w", fmt.Errorf("order %d not found", 7), ""},
		{"wrapped errors.New", fmt.Errorf("apply: %w", plain), ""},
		{"Permanent of errors.New", consumer.Permanent(fmt.Errorf("apply: %w", plain)), ""},
		{"custom", custom, "*consumer_test.decodeError"},
		{"wrapped custom", fmt.Errorf("apply: %w", custom), "*consumer_test.decodeError"},
		{"Permanent of wrapped custom", consumer.Permanent(fmt.Errorf("apply: %w", custom)), "*consumer_test.decodeError"},
		{"RetryAfter of custom", consumer.RetryAfter(custom, time.Second), "*consumer_test.decodeError"},
		{"Unavailable of custom", consumer.Unavailable(fmt.Errorf("db: %w", custom)), "*consumer_test.decodeError"},
		{"custom after a plain one in %w %w", fmt.Errorf("%w; %w", plain, custom), "*consumer_test.decodeError"},
		{"joined", errors.Join(plain, consumer.Permanent(custom)), "*consumer_test.decodeError"},
		{"panic", &consumer.PanicError{Value: "boom"}, "panic"},
	}
	at := time.Date(2026, 12, 7, 3, 0, 0, 0, time.UTC)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			msg := &consumer.Message{ID: "m1", Partition: -1, Offset: -1,
				Headers: map[string]string{consumer.HeaderErrorType: "*errors.errorString"}}
			h := consumer.FailureHeaders(msg, consumer.Failure{Consumer: "c", Err: c.err, Reason: consumer.ReasonPermanent, At: at})
			got, ok := h[consumer.HeaderErrorType]
			if got != c.want || ok != (c.want != "") {
				t.Errorf("%s = %q (present %v), want %q (present %v)", consumer.HeaderErrorType, got, ok, c.want, c.want != "")
			}
		})
	}
}
