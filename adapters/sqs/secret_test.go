package sqs

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestEndpointNeverShowsItsPassword: an Endpoint with user info that does
// not parse is refused without the password. Catches: the endpoint printed
// raw in the validation error.
func TestEndpointNeverShowsItsPassword(t *testing.T) {
	err := Config{QueueName: "q", Consumer: "c", Endpoint: "http://user:Zq9x%zz@[::1"}.withDefaults().validate()
	require.ErrorContains(t, err, "Endpoint")
	require.NotContains(t, err.Error(), "Zq9x")
}
