package consumer_test

import (
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/oncely/oncely/consumer"
)

// plainSize counts a copy as body plus header names and values.
func plainSize(body []byte, h map[string]string) int {
	n := len(body)
	for k, v := range h {
		n += len(k) + len(v)
	}
	return n
}

// headersOnly counts the headers only, as a frame limit does.
func headersOnly(_ []byte, h map[string]string) int { return plainSize(nil, h) }

// bigHeaders are a dead-letter copy's headers whose producer headers ("big",
// "bigger") alone exceed the limits below.
func bigHeaders() map[string]string {
	return map[string]string{
		consumer.HeaderMessageID:        "m1",
		consumer.HeaderDeadLetterReason: consumer.ReasonExhausted,
		consumer.HeaderError:            "boom",
		consumer.HeaderTraceParent:      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		"ce_id":                         "m1", // the adapter's ID header, passed as keep
		"small":                         "s",
		"big":                           strings.Repeat("b", 3000),
		"bigger":                        strings.Repeat("B", 5000),
	}
}

// TestFitCopyRemovesOwnHeaders: a dead-letter copy that does not fit even
// without its body loses the message's own headers, largest first and no
// more than needed, each listed with its size; the failure context, the
// trace context and the kept headers stay. Catches: a dead letter with
// oversized producer headers refused for good (held on the outage backoff
// forever), headers removed smallest first or all at once, the ID or the
// failure context removed.
func TestFitCopyRemovesOwnHeaders(t *testing.T) {
	body := []byte(strings.Repeat("x", 1000))
	headers := bigHeaders()
	orig := maps.Clone(headers)
	const limit = 4000
	f, err := consumer.FitCopy(body, headers, limit, plainSize, true, "ce_id")
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(headers, orig) {
		t.Error("FitCopy modified its argument")
	}
	if n := plainSize(f.Body, f.Headers); n > limit {
		t.Errorf("fitted copy has %d bytes, limit %d", n, limit)
	}
	if !f.BodyRemoved || len(f.Body) != 0 || f.Headers[consumer.HeaderBodyRemovedSize] != "1000" {
		t.Errorf("body removed %t (%d bytes left, size marker %q), want the body replaced by its markers first", f.BodyRemoved, len(f.Body), f.Headers[consumer.HeaderBodyRemovedSize])
	}
	if want := []string{"bigger"}; !slices.Equal(f.HeadersRemoved, want) {
		t.Errorf("removed %v, want %v (largest first, no more than needed)", f.HeadersRemoved, want)
	}
	var listed map[string]int
	if err := json.Unmarshal([]byte(f.Headers[consumer.HeaderHeadersRemoved]), &listed); err != nil {
		t.Fatalf("%s = %q: %v", consumer.HeaderHeadersRemoved, f.Headers[consumer.HeaderHeadersRemoved], err)
	}
	if want := map[string]int{"bigger": 5000}; !maps.Equal(listed, want) {
		t.Errorf("%s lists %v, want %v", consumer.HeaderHeadersRemoved, listed, want)
	}
	for _, k := range []string{consumer.HeaderMessageID, consumer.HeaderDeadLetterReason, consumer.HeaderError, consumer.HeaderTraceParent, "ce_id", "small", "big"} {
		if f.Headers[k] != orig[k] {
			t.Errorf("header %s = %q, want %q kept", k, f.Headers[k], orig[k])
		}
	}

	// A tighter limit removes "big" too ("small" is not needed); what is
	// never removed stays.
	f, err = consumer.FitCopy(body, headers, 1000, plainSize, true, "ce_id")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"bigger", "big"}; !slices.Equal(f.HeadersRemoved, want) {
		t.Errorf("removed %v, want %v", f.HeadersRemoved, want)
	}
	if f.Headers["ce_id"] != "m1" || f.Headers[consumer.HeaderMessageID] != "m1" {
		t.Errorf("ID headers lost: %v", f.Headers)
	}
}

// TestFitCopyFrameLimit: under a limit on the headers alone (an AMQP frame)
// removing the body does not help, so the body stays and only headers go.
// Catches: a body removed for nothing.
func TestFitCopyFrameLimit(t *testing.T) {
	body := []byte("payload")
	f, err := consumer.FitCopy(body, bigHeaders(), 4000, headersOnly, true)
	if err != nil {
		t.Fatal(err)
	}
	if f.BodyRemoved || string(f.Body) != "payload" {
		t.Errorf("body removed (%q) although the limit does not count it", f.Body)
	}
	if len(f.HeadersRemoved) == 0 || headersOnly(nil, f.Headers) > 4000 {
		t.Errorf("removed %v, %d header bytes", f.HeadersRemoved, headersOnly(nil, f.Headers))
	}
}

// TestFitCopyRefused: a retry copy never loses a header of the message, and a
// copy whose never-removed headers exceed the limit by themselves is
// refused. Catches: a retry copy changed behind the handler's back; a copy
// reported as fitting that does not.
func TestFitCopyRefused(t *testing.T) {
	_, err := consumer.FitCopy([]byte("b"), bigHeaders(), 4000, plainSize, false)
	if !errors.Is(err, consumer.ErrCopyRefused) {
		t.Errorf("retry copy: %v, want ErrCopyRefused", err)
	}
	h := bigHeaders()
	h[consumer.HeaderMessageID] = strings.Repeat("i", 5000)
	_, err = consumer.FitCopy([]byte("b"), h, 4000, plainSize, true)
	if !errors.Is(err, consumer.ErrCopyRefused) {
		t.Errorf("oversized ID: %v, want ErrCopyRefused", err)
	}
}
