package redact

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestURL(t *testing.T) {
	for raw, want := range map[string]string{
		"amqp://guest:s3cret@host:5672/vh":                       "amqp://guest:xxxxx@host:5672/vh",
		"kafka://user:2024/secret@host":                          "kafka://user:xxxxx@host",
		"nats://T0KEN@host:4222":                                 "nats://xxxxx@host:4222",
		"redis://:pw@host:6379/0":                                "redis://xxxxx@host:6379/0",
		"user:pa@ss@host:9092":                                   "user:xxxxx@host:9092",
		"sqs://r?endpoint=http://u:p@h":                          "sqs://xxxxx@h",
		"kafka://host:9092":                                      "kafka://host:9092",
		"sqs://r?endpoint=" + url.QueryEscape("http://u:pw@h:1"): "sqs://r?endpoint=" + url.QueryEscape("http://u:xxxxx@h:1"),
	} {
		require.Equal(t, want, URL(raw), raw)
	}
	require.True(t, Ambiguous("kafka://user:2024/secret@host"))
	require.True(t, Ambiguous("amqp://u:a?b@host"))
	require.False(t, Ambiguous("amqp://u:a%2Fb@host/vh"))
	require.False(t, Ambiguous("kafka://host:9092/x"))
}

func TestErrorAndHandlerScrubSecrets(t *testing.T) {
	raw := "nats://" + url.UserPassword("me", "pa/ss#Wv8k").String() + "@h"
	base := errors.New("dial nats://me:pa%2Fss%23Wv8k@h and pa/ss#Wv8k")
	err := Error(fmt.Errorf("wrapped: %w", base), raw)
	require.NotContains(t, err.Error(), "Wv8k")
	require.ErrorIs(t, err, base)

	var buf bytes.Buffer
	l := slog.New(Handler(slog.NewTextHandler(&buf, nil), Secrets(raw)))
	l.With("url", raw).Info("connect "+raw, "err", base, slog.Group("g", "u", raw))
	require.NotContains(t, buf.String(), "Wv8k")
	require.Contains(t, buf.String(), Mask)
}
