package main

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/adapters"
	"github.com/oncely/oncely/adapters/kafka"
)

// testNoConsumer: a consumer name that never read the source is an error on
// every dlq command and lag, naming the consumers that exist (RabbitMQ:
// saying they cannot be listed), instead of an empty dead-letter
// destination (issue 38).
func testNoConsumer(t *testing.T, env map[string]string, opts []adapters.Option, rawURL, source, name string) {
	t.Helper()
	typo := name + "-typo"
	for _, args := range [][]string{
		{"dlq", "list"}, {"dlq", "show"}, {"dlq", "redrive"}, {"dlq", "purge", "--yes"}, {"lag"},
	} {
		code, out, errs := cli(t, env, opts, append(args, "--source", source, "--consumer", typo)...)
		require.Equal(t, 1, code, "%v with a consumer name that never read the source: %s%s", args, out, errs)
		require.Contains(t, errs, `consumer "`+typo+`" does not exist on source "`+source+`"`, "%v", args)
		require.Contains(t, errs, "check --consumer", "%v", args)
		if strings.HasPrefix(rawURL, "amqp") {
			require.Contains(t, errs, "cannot be listed", "%v", args)
		} else {
			require.Contains(t, errs, `its consumers are "`+name+`"`, "%v", args)
		}
	}
}

// startKafkaGroup creates the dead-letter topic of (source, group), as a
// Source of group does at start, without committing anything.
func startKafkaGroup(t *testing.T, rawURL, source, group string) {
	t.Helper()
	u, err := url.Parse(rawURL)
	require.NoError(t, err)
	c, err := kafka.NewClient(strings.Split(u.Host, ","))
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.CreateTopic(context.Background(), kafka.DeadLetterTopic(source, group), 1, 0))
}
