package console

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// New reports every problem of a Config at once.
func TestConfigValidation(t *testing.T) {
	_, err := New(Config{Schema: "Bad-Name", Tokens: map[string]string{"short": "bob", "long-enough-token-123": " "},
		DefaultRate: 5000, Consumers: []Consumer{{Source: "s"}}, ScanLimit: -1})
	require.Error(t, err)
	for _, want := range []string{"no Broker", "no Pool", "invalid Schema", `the token of "bob" in Tokens is shorter than 16`,
		"a token in Tokens has an empty name", "DefaultRate 5000 and MaxRate 1000", "ScanLimit -1", `incomplete Consumers entry "s"/""`} {
		require.ErrorContains(t, err, want)
	}
}
