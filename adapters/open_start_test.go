package adapters_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/adapters"
)

// TestOpenStartParam: the log brokers share start=; a value other than
// earliest, latest or an RFC 3339 time is refused before connecting, and
// the other brokers do not know the parameter.
func TestOpenStartParam(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, u := range []string{"kafka://127.0.0.1:1?start=newest", "nats://127.0.0.1:1?start=2026-12-07", "redis://127.0.0.1:1/0?start=yesterday"} {
		_, err := adapters.Open(ctx, u)
		require.ErrorContains(t, err, "want earliest, latest or an RFC 3339 time", u)
	}
	_, err := adapters.Open(ctx, "mem://?start=latest")
	require.ErrorContains(t, err, `unknown query parameter "start"`)
}
