package adapters_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/adapters"
)

// TestOpenSQSWithoutCredentials opens real SQS (no endpoint) where the
// default chain finds no credentials: no environment keys, empty shared
// files, no instance metadata. Catches: missing credentials reported as
// "SQS does not answer … check that the broker is running", and a lookup
// that is not bounded in time.
func TestOpenSQSWithoutCredentials(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	require.NoError(t, os.WriteFile(empty, nil, 0o600))
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_DEFAULT_PROFILE",
		"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN"} {
		t.Setenv(k, "")
	}
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", empty)
	t.Setenv("AWS_CONFIG_FILE", empty)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true") // nothing leaves 127.0.0.1

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	b, err := adapters.Open(ctx, "sqs://us-east-1")
	require.Nil(t, b)
	require.Less(t, time.Since(start), 5*time.Second)
	require.ErrorContains(t, err, "no AWS credentials found: set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE, or run where an instance/task role is available")
	require.ErrorContains(t, err, "EC2 IMDS", "the SDK's own reason is kept")
	require.ErrorIs(t, err, adapters.ErrNoCredentials)
	require.NotContains(t, err.Error(), "does not answer")
}
