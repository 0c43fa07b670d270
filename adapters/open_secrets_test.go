package adapters_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/adapters"
)

// secretPieces make up the passwords and tokens below; none of them may
// show in an error or a log line.
var secretPieces = []string{"Zq9x", "Wv8k", "Yp7m", "Ur6n", "Ts5b", "Ro4c"}

// syncBuffer is a log destination shared by the handler's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestOpenNeverShowsPasswords opens every scheme with passwords and tokens
// holding '/', '#', '?', '@', ':' and '%', written raw and percent-encoded,
// against refused and malformed targets, and greps each error and every
// log line. Catches: a parse error quoting the user info, a URL without a
// scheme echoed whole, a NATS connect error with the raw URL, a NATS token
// kept by url.URL.Redacted, the RabbitMQ client's parse error wrapped, an
// SQS endpoint's user info printed, and a password split by an unencoded
// '/' into host and path where no redaction finds it.
func TestOpenNeverShowsPasswords(t *testing.T) {
	passwords := []string{
		"Zq9x/Wv8k#Yp7m?Ur6n@Ts5b:Ro4c%41",
		"Zq9x/Wv8k", "Zq9x#Wv8k", "Zq9x?Wv8k", "Zq9x@Wv8k", "Zq9x:Wv8k", "Zq9x%Wv8k", "Zq9x%41Wv8k", "2024/Zq9x",
	}
	hosts := []string{"127.0.0.1:1", "127.0.0.1:x", "[::1", "127.0.0.1:1/v?bad=%zz"}
	var urls []string
	for _, s := range []string{"kafka", "kafkas", "amqp", "amqps", "nats", "tls", "redis", "rediss", "redis+sentinel", "redis+cluster", "rediss+cluster", "mem"} {
		for _, p := range passwords {
			for _, h := range hosts {
				urls = append(urls,
					s+"://user:"+p+"@"+h,                               // as typed
					s+"://"+url.UserPassword("user", p).String()+"@"+h, // percent-encoded
				)
				if !strings.Contains(p, ":") { // else it reads user:password, the user shown
					urls = append(urls,
						s+"://"+p+"@"+h, // a token (NATS) as typed
						s+"://"+url.User(p).String()+"@"+h+"?tls_insecure_skip_verify=true", // encoded
					)
				}
			}
		}
	}
	for _, p := range passwords {
		enc := url.UserPassword("user", p).String()
		urls = append(urls,
			"sqs://us-east-1?endpoint="+url.QueryEscape("http://"+enc+"@127.0.0.1:1"),
			"sqs://us-east-1?endpoint=http://"+enc+"@127.0.0.1:1",
			"sqs://us-east-1?endpoint=http://user:"+p+"@127.0.0.1:1",
			"user:"+p+"@127.0.0.1:9092", // no scheme
			"localhost:"+p+"@x",
			"kafka:user:"+p+"@127.0.0.1:1",
		)
	}
	logs := &syncBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	var mu sync.Mutex
	var failures []string
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for _, raw := range urls {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			b, err := adapters.Open(ctx, raw, adapters.WithLogger(logger))
			if b != nil {
				_ = b.Close()
			}
			if err == nil {
				return
			}
			msg := err.Error()
			for _, piece := range secretPieces {
				if strings.Contains(msg, piece) {
					mu.Lock()
					failures = append(failures, raw+"\n  error: "+msg)
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	require.Greater(t, len(urls), 1000)
	require.Empty(t, failures, "%d of %d URLs leaked a password in the error:\n%s", len(failures), len(urls), strings.Join(failures, "\n"))
	out := logs.String()
	for _, piece := range secretPieces {
		require.NotContains(t, out, piece, "a password in a log line")
	}
	require.Contains(t, out, "tls_insecure_skip_verify=true", "a warning for skipped verification")
}

// TestOpenWarnsOfInsecureSettings: tls_insecure_skip_verify=true and
// credentials over a plain-text scheme to a host off the loopback log one
// warning each at Open; a plain loopback URL logs none. Catches: a TLS
// connection that checks nothing opened without a word.
func TestOpenWarnsOfInsecureSettings(t *testing.T) {
	for _, tc := range []struct {
		url, want string
	}{
		{"kafkas://user:pw@127.0.0.1:1?tls_insecure_skip_verify=true&sasl=plain", "tls_insecure_skip_verify=true"},
		{"amqps://user:pw@127.0.0.1:1/?tls_insecure_skip_verify=true", "tls_insecure_skip_verify=true"},
		{"rediss://user:pw@127.0.0.1:1?tls_insecure_skip_verify=true", "tls_insecure_skip_verify=true"},
		{"tls://user:pw@127.0.0.1:1?tls_insecure_skip_verify=true", "tls_insecure_skip_verify=true"},
		{"amqp://user:pw@192.0.2.1:1/", "plain-text connection"},
		{"redis://user:pw@broker.invalid:1", "plain-text connection"},
		{"amqp://user:pw@127.0.0.1:1/", ""},
		{"nats://user:pw@127.0.0.1:1,localhost:2,[::1]:3", ""},
		{"redis+sentinel://user:pw@127.0.0.1:1,127.0.0.1:2/oncely", ""},
		{"redis+cluster://user:pw@127.0.0.1:1,127.0.0.1:2/", ""},
		{"redis+cluster://user:pw@127.0.0.1:1,192.0.2.1:2/", "plain-text connection"},
		{"nats://user:pw@127.0.0.1:1,192.0.2.1:2", "plain-text connection"},
	} {
		t.Run(tc.url, func(t *testing.T) {
			var logs syncBuffer
			ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
			defer cancel()
			b, err := adapters.Open(ctx, tc.url, adapters.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
			if err == nil {
				_ = b.Close()
			}
			out := logs.String()
			if tc.want == "" {
				require.NotContains(t, out, "level=WARN")
				return
			}
			require.Equal(t, 1, strings.Count(out, "level=WARN"), out)
			require.Contains(t, out, tc.want)
			require.NotContains(t, out, "pw@")
		})
	}
}
