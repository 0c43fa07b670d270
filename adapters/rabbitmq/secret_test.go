package rabbitmq

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestNewNeverShowsThePassword: New with URLs the client cannot parse, or
// that parse into something else than meant, fails without the password.
// Catches: the client's parse error, which quotes the URL, wrapped.
func TestNewNeverShowsThePassword(t *testing.T) {
	for _, raw := range []string{
		"amqp://guest:Zq9x%zzWv8k@127.0.0.1:1/",
		"amqp://guest:Zq9x/Wv8k@127.0.0.1:1/",
		"amqp://guest:Zq9x#Wv8k@127.0.0.1:1/",
		"amqp://guest:Zq9x?Wv8k@127.0.0.1:1/",
		"amqp://guest:Zq9xWv8k@127.0.0.1:port/",
		"amqps://Zq9xWv8k@[::1/",
	} {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		_, err := New(ctx, Config{URL: raw, Queue: "q", Consumer: "c"})
		cancel()
		if err == nil {
			t.Fatalf("%s: no error", raw)
		}
		if strings.Contains(err.Error(), "Zq9x") || strings.Contains(err.Error(), "Wv8k") {
			t.Errorf("%s: the password in %q", raw, err)
		}
	}
}
