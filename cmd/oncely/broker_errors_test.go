package main

import (
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/oncely/oncely/internal/envtest"
)

// TestRefusedLoginHint runs a command against RabbitMQ with a wrong
// password. Catches: the CLI telling the user to check that a broker is
// running when it answered and refused the login, and the password shown.
func TestRefusedLoginHint(t *testing.T) {
	u, err := url.Parse(envtest.RabbitMQ(t))
	require.NoError(t, err)
	u.User = url.UserPassword("guest", "wrong-s3cret-pw")
	code, _, errs := cli(t, nil, nil, "lag", "--broker", u.String(), "--source", "s", "--consumer", "c")
	require.Equal(t, 1, code)
	require.Contains(t, errs, `login refused for user "guest"`)
	require.Contains(t, errs, "the broker answered: check the user, password and vhost in --broker / BROKER_URL")
	require.NotContains(t, errs, "broker is running")
	require.NotContains(t, errs, "wrong-s3cret-pw")
}
